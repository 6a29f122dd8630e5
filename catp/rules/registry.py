"""Compiled rule sets: the matchers that run over a document, by language."""

from __future__ import annotations

from dataclasses import dataclass

from catp.errors import CatpError
from catp.rules.loader import LoadedRuleSet, check_unique_ids
from catp.rules.matchers import Matcher, build_matcher
from catp.rules.prefilter import AnchorIndex


@dataclass
class CompiledRule:
    matcher: Matcher
    path: str
    line: int

    @property
    def rule(self):
        return self.matcher.rule


class RuleRegistry:
    """Holds every compiled rule of some rule sets (like Presidio's RecognizerRegistry)."""

    def __init__(self, loaded: list[LoadedRuleSet], *, cue_window_tokens: int | None = None) -> None:
        check_unique_ids(loaded)
        if cue_window_tokens is not None and not 1 <= cue_window_tokens <= 4096:
            raise CatpError(f"the cue window must be 1 to 4096 tokens, got {cue_window_tokens}")
        self.loaded = loaded
        self.rules: list[CompiledRule] = []
        self._anchor_indexes: dict[frozenset, AnchorIndex] = {}
        for item in loaded:
            for rule in item.ruleset.rules:
                if cue_window_tokens is not None and rule.kind == "cue_window" and rule.category == "cue":
                    rule = rule.model_copy(update={"window_tokens": cue_window_tokens})
                line = item.lines.get(rule.id, 0)
                where = {"path": item.path, "line": line, "rule_id": rule.id}
                self.rules.append(CompiledRule(build_matcher(rule, where), item.path, line))

    def for_langs(self, langs: set[str]) -> list[CompiledRule]:
        return [c for c in self.rules if langs & set(c.rule.lang)]

    def anchor_index(self, langs: set[str]) -> AnchorIndex:
        """One Aho-Corasick automaton over the anchors of every prefiltered regex rule and every pos
        rule for these languages."""
        key = frozenset(langs)
        if key not in self._anchor_indexes:
            rules = self.for_langs(langs)
            pos = [c.rule.id for c in rules if getattr(c.matcher, "ac_anchors", False)]
            self._anchor_indexes[key] = AnchorIndex({
                c.rule.id: c.rule.anchors for c in rules
                if getattr(c.matcher, "prefiltered", False) or c.rule.id in pos}, alternation=pos)
        return self._anchor_indexes[key]

    def get(self, rule_id: str) -> CompiledRule | None:
        return next((c for c in self.rules if c.rule.id == rule_id), None)

    @property
    def names(self) -> list[str]:
        return [item.ruleset.name for item in self.loaded]
