"""A rule kind defined outside catp, as a user's plugin defines one: `acronym` marks words of capital letters
(NASDAQ, HIPAA). `setup` registers it; `catp batch --setup _rule_kind_plugin:setup` calls it (tests/unit/rules/test_rules_catalog.py)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from catp.rules.catalog import register_kind
from catp.rules.matchers import Matcher
from catp.rules.schema import RuleBase


class AcronymRule(RuleBase):
    """Words of at least `min_letters` capital letters."""

    kind: Literal["acronym"]
    min_letters: int = Field(3, ge=2, le=20)
    expand: Literal["none", "clause", "sentence"] = "none"


class AcronymMatcher(Matcher):
    def __init__(self, rule: AcronymRule, where: dict) -> None:
        super().__init__(rule, where)
        self.pattern = re.compile(rf"\b[A-Z]{{{rule.min_letters},}}\b")

    def spans(self, ctx):
        for match in self.pattern.finditer(ctx.text):
            yield self.expanded(ctx, match.start(), match.end())


def setup() -> None:
    register_kind("acronym", AcronymRule, AcronymMatcher)
