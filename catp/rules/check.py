"""Lint rule files and run every rule's own examples (`catp rules lint|test`)."""

from __future__ import annotations

from dataclasses import dataclass

from catp.document import Analysis
from catp.rules.context import MatchContext
from catp.rules.loader import LoadedRuleSet
from catp.rules.registry import RuleRegistry
from catp.segment import segment
from catp.tokens import TokenCounter


@dataclass
class ExampleFailure:
    path: str
    line: int
    rule_id: str
    text: str
    expected_match: bool

    def __str__(self) -> str:
        want = "should match" if self.expected_match else "should not match"
        return f"{self.path}:{self.line} (rule {self.rule_id!r}): example {want}: {self.text!r}"


def rule_matches(compiled, text: str, tokens: TokenCounter, *, prefilter: str = "always") -> bool:
    """Does this one rule yield a span on `text` (segmented as a document of its own)? By default
    through the anchor prefilter wherever the rule has one, as on long documents."""
    from catp.detect import detect_langs

    doc = Analysis(text=text, lang=detect_langs(text)[0])
    segment(doc)
    ctx = MatchContext(doc, tokens.token_starts(text), prefilter=prefilter)
    return any(True for _ in compiled.matcher.spans(ctx))


def run_examples(loaded: list[LoadedRuleSet], tokens: TokenCounter) -> tuple[int, list[ExampleFailure]]:
    registry = RuleRegistry(loaded)
    checked, failures = 0, []
    for compiled in registry.rules:
        rule = compiled.rule
        for text, expected in [(t, True) for t in rule.examples.match] + [(t, False) for t in rule.examples.no_match]:
            checked += 1
            if rule_matches(compiled, text, tokens) != expected:
                failures.append(ExampleFailure(compiled.path, compiled.line, rule.id, text, expected))
    return checked, failures


def lint(loaded: list[LoadedRuleSet]) -> list[str]:
    """Problems that load fine but are probably mistakes."""
    problems = []
    for item in loaded:
        for rule in item.ruleset.rules:
            where = f"{item.path}:{item.lines.get(rule.id, 0)} (rule {rule.id!r})"
            if not rule.examples.match:
                problems.append(f"{where}: no `examples.match`; add texts it must match")
            if rule.action in ("delete", "detach", "discount") and rule.priority > 60:
                problems.append(f"{where}: a {rule.action} rule with priority {rule.priority}; priority means "
                                f"nothing for it")
            problems.extend(f"{where}: {p}" for p in anchor_problems(rule))
    problems.extend(unknown_weighted_categories(loaded))
    return problems


def tuned_fields_changed(loaded: list[LoadedRuleSet]) -> list[str]:
    """A user file's `selection` fields that replace a value the built-in rule sets tuned on the dev sets: a
    --rules file's selection overrides the domain's, so copying the README's fields silently costs recall."""
    from catp.rules.catalog import CATALOG

    tuned: dict[tuple[str, str], list[str]] = {}
    for item in CATALOG.builtins():
        for lang, policy in item.ruleset.selection.items():
            for name in policy.model_fields_set:
                tuned.setdefault((lang, name), []).append(f"{item.ruleset.name} {getattr(policy, name)!r}")
    problems = []
    for item in loaded:
        if CATALOG.is_builtin_file(item.path):
            continue
        for lang, policy in item.ruleset.selection.items():
            for name in sorted(policy.model_fields_set):
                if (lang, name) in tuned:
                    problems.append(f"{item.path}: selection.{lang}.{name} replaces the value the built-in rule sets "
                                    f"tuned on the dev sets ({', '.join(tuned[lang, name])}) for every domain it "
                                    "is used with; leave it out unless `catp eval` shows it helps")
    return problems


def unknown_weighted_categories(loaded: list[LoadedRuleSet]) -> list[str]:
    """`selection.<lang>.category_weights` keys that no rule has as its category (here or in the built-in
    sets): a misspelt category would weigh nothing and say nothing."""
    from catp.rules.catalog import CATALOG

    known = {rule.category for item in loaded for rule in item.ruleset.rules}
    known |= {rule.category for item in CATALOG.builtins() for rule in item.ruleset.rules}
    return [f"{item.path}: selection.{lang}.category_weights names {name!r}, a category no rule has "
            f"(known: {', '.join(sorted(known))})"
            for item in loaded for lang, policy in item.ruleset.selection.items()
            for name in policy.category_weights if name not in known]


def anchor_problems(rule) -> list[str]:
    """A rule's `anchors`: every must-match example holds one, and (regex rules) the pattern
    guarantees one in every match, or the prefilter is not used."""
    anchors = getattr(rule, "anchors", None)
    if not anchors:
        return []
    from catp.rules.prefilter import anchors_cover, barriers, fold_anchor, window_widths

    out = []
    folded = [fold_anchor(a) for a in anchors]
    for text in rule.examples.match:
        if not any(a in fold_anchor(text) for a in folded):
            out.append(f"the example {text!r} holds none of the anchors")
    if rule.kind == "regex":
        from catp.rules.matchers import compile_regex

        flags = compile_regex(rule.pattern, rule.flags, where={}).flags
        covered = anchors_cover(rule.pattern, flags, anchors)
        if covered is None:
            out.append("cannot check the anchors against the pattern (syntax the check does not read); "
                       "they are not used")
        elif not covered:
            out.append("some matches of the pattern may hold none of the anchors; they are not used "
                       "(give a literal of every alternative)")
        elif not barriers(rule.pattern, flags) and not window_widths(rule.pattern, flags):
            out.append("the anchors are not used: the pattern may match across every line and sentence "
                       "end and has no bound on its length, may match the empty string, or uses $ or \\Z")
    return out
