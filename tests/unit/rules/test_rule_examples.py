"""Every rule in rules/*.yaml against its own `examples`: each `match` text yields at least one
span from that rule, each `no_match` text yields none.

The rule's matcher runs alone over a segmented Analysis of the example (headings need units;
cue windows need the real token offsets), through `catp.rules.check.rule_matches`, the helper
behind `catp rules test`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catp.detect import detect_langs
from catp.document import Analysis
from catp.rules.check import rule_matches
from catp.rules.context import MatchContext
from catp.rules.loader import builtin_rules_dir, load_file
from catp.rules.registry import CompiledRule, RuleRegistry
from catp.segment import segment
from catp.tokens import load_token_counter

RULE_FILES = sorted(builtin_rules_dir().glob("*.yaml"))
TOKENS = load_token_counter()


def found(compiled: CompiledRule, text: str) -> list[str]:
    """What the rule matched, for the failure message."""
    doc = segment(Analysis(text=text, lang=detect_langs(text)[0]))
    return [text[s.start : s.end] for s in compiled.matcher.spans(MatchContext(doc, TOKENS.token_starts(text)))]


def _cases():
    for path in RULE_FILES:
        for compiled in RuleRegistry([load_file(path)]).rules:
            examples = compiled.rule.examples
            for expect, texts in (("match", examples.match), ("no_match", examples.no_match)):
                for i, text in enumerate(texts):
                    yield pytest.param(compiled, expect, text, id=f"{path.stem}:{compiled.rule.id}:{expect}{i}")


CASES = list(_cases())


def test_rule_files_were_found():
    assert any(p.name == "common.yaml" for p in RULE_FILES)
    assert len(CASES) > 50


def test_every_rule_has_examples():
    missing = [f"{Path(c.path).name}:{c.rule.id}" for path in RULE_FILES
               for c in RuleRegistry([load_file(path)]).rules
               if not (c.rule.examples.match and c.rule.examples.no_match)]
    assert not missing, f"rules without both match and no_match examples: {missing}"


@pytest.mark.parametrize("compiled, expect, text", CASES)
def test_rule_example(compiled, expect, text):
    matched = rule_matches(compiled, text, TOKENS)
    if expect == "match":
        assert matched, f"{compiled.rule.id} found nothing in {text!r}"
    else:
        assert not matched, f"{compiled.rule.id} should not match {text!r} but found {found(compiled, text)}"
