"""Matchers turn one rule into spans over a document. One class per rule kind,
found through `MATCHERS` (add a kind with `@register_matcher("kind")`)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator

import regex

from catp.document import Action, Span, make_span
from catp.errors import RuleError
from catp.rules.context import MatchContext
from catp.rules.guard import Guard
from catp.rules.prefilter import AnchorIndex, anchors_cover, barriers, stretches, window_widths, windows
from catp.rules.schema import CueWindowRule, HeadingRule, PhraseRule, PosRule, RegexRule

MATCHERS: dict[str, type[Matcher]] = {}


def register_matcher(kind: str) -> Callable[[type[Matcher]], type[Matcher]]:
    def wrap(cls: type[Matcher]) -> type[Matcher]:
        MATCHERS[kind] = cls
        return cls

    return wrap


# Matching runs with concurrent=True: `regex` then releases the GIL while it scans (the text is an
# immutable str, so this is safe), letting rules run side by side in threads. Same matches.


def compile_regex(pattern: str, flags: list[str], *, where: dict) -> regex.Pattern:
    value = regex.V0
    for name in flags:
        value |= getattr(regex, name)
    try:
        return regex.compile(pattern, value)
    except regex.error as exc:
        raise RuleError(f"invalid regex: {exc}", **where) from exc


class Matcher:
    """Base class: `spans(ctx)` yields the rule's spans over `ctx.doc`."""

    def __init__(self, rule, where: dict) -> None:
        self.rule = rule
        self.action = Action(rule.action)
        self._labels = (rule.category, rule.id, rule.priority, self.action)  # what each Span carries
        self._expand = getattr(rule, "expand", "none")

    def applies(self, lang: str) -> bool:
        return lang in self.rule.lang

    def spans(self, ctx: MatchContext) -> Iterator[Span]:  # pragma: no cover - abstract
        raise NotImplementedError

    def span(self, start: int, end: int) -> Span:
        return make_span(start, end, *self._labels)

    def expanded(self, ctx: MatchContext, start: int, end: int) -> Span:
        """The span grown to its enclosing clause or sentence when the rule asks for it."""
        expand = self._expand
        if expand == "clause":
            start, end = ctx.clause_start(start), max(end, ctx.clause_end(start))
        elif expand == "sentence":
            start, end = ctx.sentence_start(start), max(end, ctx.sentence_end(start))
        else:
            return make_span(start, end, *self._labels)
        return make_span(start, end, *self._labels, True)


@register_matcher("regex")
class RegexMatcher(Matcher):
    def __init__(self, rule: RegexRule, where: dict) -> None:
        super().__init__(rule, where)
        self.pattern = compile_regex(rule.pattern, rule.flags, where=where)
        group = rule.group
        if not (0 <= group <= self.pattern.groups if isinstance(group, int) else group in self.pattern.groupindex):
            raise RuleError(f"group {group!r} does not exist in the pattern", **where)
        self.validate = None
        if rule.validate_with:
            from catp.rules.validators import VALIDATORS

            if rule.validate_with not in VALIDATORS:
                raise RuleError(f"unknown validator {rule.validate_with!r}; known: {', '.join(VALIDATORS)}", **where)
            self.validate = VALIDATORS[rule.validate_with]

        # Anchor prefilter: the characters no match can hold ('' = always scan the whole text). Only
        # anchors that provably cover every match are used, so results never depend on them.
        # Or, when matches have a bounded length, (W, L): the longest match and lookahead.
        self.barriers, self.widths = "", None
        if rule.anchors and anchors_cover(rule.pattern, self.pattern.flags, rule.anchors):
            self.barriers = barriers(rule.pattern, self.pattern.flags)
            self.widths = window_widths(rule.pattern, self.pattern.flags)
        self.prefiltered = bool(self.barriers or self.widths)
        self._own_index = None

    def own_anchor_index(self):
        """An anchor index of this rule alone (when the context has none covering it)."""
        if self._own_index is None:
            self._own_index = AnchorIndex({self.rule.id: self.rule.anchors})
        return self._own_index

    def spans(self, ctx: MatchContext) -> Iterator[Span]:
        group, text, validate = self.rule.group, ctx.text, self.validate
        if self._expand == "none" and validate is None:  # most rules: the match is the span
            labels = self._labels
            for m in self._matches(ctx):
                start, end = m.span(group)
                if end > start:
                    yield make_span(start, end, *labels)
            return
        for m in self._matches(ctx):
            start, end = m.span(group)
            if end > start and (validate is None or validate(text[start:end])):
                yield self.expanded(ctx, start, end)

    def _matches(self, ctx: MatchContext):
        """The pattern's matches over the whole text: one scan, or (the same matches) scans of the
        barrier-free stretches, or of the windows, that hold an anchor (catp/rules/prefilter.py).
        ctx.prefilter "stretches" or "windows" forces one way, for tests."""
        text, mode = ctx.text, ctx.prefilter
        if self.prefiltered and mode != "never":
            hits = ctx.anchor_hits(self)
            best = None
            if self.barriers and mode in ("auto", "always", "stretches"):
                best = ("stretches", stretches(text, ctx.barrier_positions(self.barriers), hits))
            if self.widths and mode in ("auto", "always", "windows"):
                width = self.widths[0]
                # where matches start; windows closer than a scan's reach past a window's end are one
                found = ("windows", windows(len(text), hits, width - 1, 1, sum(self.widths)))
                if best is None or _cost(found[1]) < _cost(best[1]):
                    best = found
            if best is not None and (mode != "auto" or _cost(best[1]) < 0.7 * len(text)):
                if best[0] == "windows":
                    return self._scan_windows(text, best[1], sum(self.widths), ctx.regex_timeout)
                return self._scan_regions(text, best[1], ctx.regex_timeout)
        with Guard(ctx.regex_timeout) as guard:
            return guard.scan(lambda concurrent: list(self.pattern.finditer(text, timeout=guard.left(),
                                                                            concurrent=concurrent)))

    def _scan_regions(self, text: str, regions: list[tuple[int, int]], timeout: float) -> list:
        """All regions share the rule's timeout (CPU seconds), counted from the first scan on."""
        finditer = self.pattern.finditer

        def scan(concurrent: bool) -> list:
            found = []
            for a, b in regions:
                found.extend(finditer(text, a, b, timeout=guard.left(), concurrent=concurrent))
            return found

        with Guard(timeout) as guard:
            return guard.scan(scan)

    def _scan_windows(self, text: str, spans: list[tuple[int, int]], reach: int, timeout: float) -> list:
        """Each window from the end of the last match; endpos `reach` past it; only the matches
        that start inside it (see catp/rules/prefilter.py). The timeout as in _scan_regions."""
        finditer, n = self.pattern.finditer, len(text)

        def scan(concurrent: bool) -> list:
            cursor, found = 0, []
            for a, b in spans:
                if cursor >= b:
                    continue
                for m in finditer(text, max(a, cursor), min(b + reach, n), timeout=guard.left(), concurrent=concurrent):
                    if m.start() >= b:
                        break
                    found.append(m)
                    cursor = m.end()
            return found

        with Guard(timeout) as guard:
            return guard.scan(scan)


def _cost(regions: list[tuple[int, int]]) -> int:
    """What scanning these regions costs, in characters of one scan (a call costs ~ 50)."""
    return sum(b - a for a, b in regions) + 50 * len(regions)


@register_matcher("heading")
class HeadingMatcher(Matcher):
    def __init__(self, rule: HeadingRule, where: dict) -> None:
        super().__init__(rule, where)
        self.pattern = compile_regex(rule.pattern, rule.flags, where=where)

    def spans(self, ctx: MatchContext) -> list[Span]:
        """One search per heading unit, all of them sharing the rule's timeout (CPU seconds, as `regex`
        counts them): a slow pattern cannot take the timeout once per heading."""
        text, search = ctx.text, self.pattern.search

        def scan(concurrent: bool) -> list[Span]:
            return [self.span(start, end) for start, end in ctx.heading_units()
                    if search(text, start, end, timeout=guard.left(), concurrent=concurrent)]

        with Guard(ctx.regex_timeout) as guard:
            return guard.scan(scan)


@register_matcher("cue_window")
class CueWindowMatcher(Matcher):
    def __init__(self, rule: CueWindowRule, where: dict) -> None:
        super().__init__(rule, where)
        self.pattern = compile_regex(rule.pattern, rule.flags, where=where)

    def spans(self, ctx: MatchContext) -> Iterator[Span]:
        rule = self.rule
        line = rule.until == "line"
        ends = {"clause": ctx.clause_ends, "sentence": ctx.sentence_ends}.get(rule.until, list)()
        starts, window, labels = ctx.token_starts, rule.window_tokens, self._labels
        n_starts, n_ends, n_text, include_cue = len(starts), len(ends), len(ctx.text), rule.include_cue
        with Guard(ctx.regex_timeout) as guard:
            cues = guard.scan(lambda concurrent: list(self.pattern.finditer(ctx.text, timeout=guard.left(),
                                                                             concurrent=concurrent)))
        for m in cues:
            cue_start, cue_end = m.span()
            i = bisect_left(starts, cue_end) + window  # ctx.token_window_end(cue_end, window)
            end = starts[i] if i < n_starts else n_text
            if n_ends:  # ctx.clause_end / sentence_end(cue_end)
                i = bisect_left(ends, cue_end + 1)
                limit = ends[i] if i < n_ends else n_text
            else:
                limit = ctx.line_end(cue_end) if line else end
            if limit < end:
                end = limit
            start = cue_start if include_cue else cue_end
            if end > start:
                yield make_span(start, end, *labels)


@register_matcher("phrases")
class PhraseMatcher(Matcher):
    """Aho-Corasick over the phrase list; ASCII-edged phrases must stand as whole words."""

    def __init__(self, rule: PhraseRule, where: dict) -> None:
        super().__init__(rule, where)
        import ahocorasick

        self.automaton = ahocorasick.Automaton()
        for phrase in rule.phrases:
            key = phrase if rule.case_sensitive else phrase.lower()
            self.automaton.add_word(key, len(key))
        self.automaton.make_automaton()

    def spans(self, ctx: MatchContext) -> Iterator[Span]:
        haystack = ctx.text if self.rule.case_sensitive else ctx.lowered
        text = ctx.text
        for last, length in self.automaton.iter(haystack):
            start, end = last - length + 1, last + 1
            if _whole_word(text, start, end):
                yield self.expanded(ctx, start, end)


def _whole_word(text: str, start: int, end: int) -> bool:
    def wordish(ch: str) -> bool:
        return ch.isascii() and ch.isalnum()

    if wordish(text[start]) and start > 0 and wordish(text[start - 1]):
        return False
    if wordish(text[end - 1]) and end < len(text) and wordish(text[end]):
        return False
    return True


@register_matcher("pos")
class PosMatcher(Matcher):
    """Token patterns: jieba.posseg for zh, spaCy's blank tokenizer + Matcher for en.
    The tagger runs only on sentences holding one of the rule's anchors."""

    def __init__(self, rule: PosRule, where: dict) -> None:
        super().__init__(rule, where)
        anchors = sorted(set(rule.anchors), key=len, reverse=True)
        self.anchor = regex.compile("|".join(regex.escape(a) for a in anchors), regex.IGNORECASE)
        # The anchor scan goes through the shared Aho-Corasick pass (same starts as self.anchor's).
        self.ac_anchors = all(rule.anchors)
        self._own_index = None

    def own_anchor_index(self):
        if self._own_index is None:
            self._own_index = AnchorIndex({self.rule.id: self.rule.anchors}, alternation=[self.rule.id])
        return self._own_index

    def spans(self, ctx: MatchContext) -> Iterator[Span]:
        from catp.rules import pos

        sentences = list(self._anchored_sentences(ctx))
        for (_, end), found in zip(sentences, pos.match_each(self.rule, ctx.text, sentences, ctx.doc.lang,
                                                              ctx.pos_cache)):
            for a, b in found:
                if self.rule.extend == "clause":
                    b = max(b, min(ctx.clause_end(a), end))
                yield self.span(a, b)

    def _anchor_starts(self, ctx: MatchContext):
        if self.ac_anchors and ctx.prefilter != "never":
            return ctx.anchor_hits(self)
        with Guard(ctx.regex_timeout) as guard:  # all at once: a lazy scan's timeout would count the tagging too
            return [m.start() for m in guard.scan(lambda concurrent: list(
                self.anchor.finditer(ctx.text, timeout=guard.left(), concurrent=concurrent)))]

    def _anchored_sentences(self, ctx: MatchContext) -> Iterator[tuple[int, int]]:
        last = -1
        for at in self._anchor_starts(ctx):
            if at < last:
                continue
            start = ctx.sentence_start(at)
            end = ctx.sentence_end(at)
            last = end
            yield start, end


def build_matcher(rule, where: dict) -> Matcher:
    try:
        cls = MATCHERS[rule.kind]
    except KeyError as exc:
        raise RuleError(f"unknown rule kind {rule.kind!r}", **where) from exc
    return cls(rule, where)
