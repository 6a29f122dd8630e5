"""Anchor prefilter: a regex rule that declares `anchors` runs only over the stretches of text that
hold one of them, with results identical to a scan of the whole text.

Why the results are the same:

* Every match of the rule holds one of its anchors (compared case-folded: see `fold`). `catp rules
  lint` checks this against the literals the pattern requires (`required_literals`), where it can
  work them out, and against the rule's `examples.match`.
* No match can hold a *barrier* character (`barriers`: '\\n', and sentence marks the pattern cannot
  consume), so each match lies inside one barrier-free stretch: the stretch around an anchor hit.
* `regex` searches a stretch with `pos`/`endpos`. `pos` does not cut the string (lookbehind, `^` and
  `\\A` see the real text); `endpos` does, so the pattern may not use `$`/`\\Z`, and its lookaheads may
  not consume a barrier (at a barrier they fail either way). `\\b` sees a barrier as a non-word
  character, the same as the end of the string. A pattern that can match the empty string, or uses
  anything this analysis does not know, gets no barriers and is scanned whole.

A pattern whose matches are at most W characters long (with bounded lookaheads, and no `$`/`\\Z`)
can also run in *windows*: a match holding an anchor that starts at h starts in [h + 1 - W, h]
(it starts at or before h and ends after it). These windows of match starts are merged and scanned
in order, each from the end of the last match (as a whole scan would go on), with `endpos` W + L
characters past the window's end (L: the longest lookahead), so every attempt that starts inside the
window sees the same text as in a whole scan; matches that start past the window are left to the
next window. This needs no barrier (text without punctuation).

The analysis reads the pattern with Python's own `re` parser (the `regex` syntax the rules use is
the same, except for `\\p{...}` properties; `\\p{Han}` is understood).
"""

from __future__ import annotations

import functools
from bisect import bisect_right

import regex

# Characters that may split a text into stretches, when a pattern cannot consume them.
BARRIER_CANDIDATES = "\n\r\u2029\u3002\uff1b;.!?\uff01\uff1f\uff0c,\u3001\uff1a:"
_HAN = "\ue000"  # stands for \p{Han} in the analysis: a private-use character, never a barrier

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]


class _Unknown(Exception):
    """The pattern uses something the analysis does not model: no prefilter."""


def _parse(pattern: str, flags: int):
    import re

    source = pattern.replace(r"\p{Han}", _HAN)
    if r"\p" in source or r"\P" in source or r"\X" in source or r"\G" in source or r"\K" in source:
        raise _Unknown
    re_flags = 0
    for name in ("IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE"):
        if flags & getattr(regex, name):
            re_flags |= getattr(re, name)
    try:
        return _p.parse(source, re_flags)
    except Exception as exc:  # re cannot read it: regex-only syntax
        raise _Unknown from exc


_CATEGORY = {
    _c.CATEGORY_DIGIT: r"\d", _c.CATEGORY_NOT_DIGIT: r"\D", _c.CATEGORY_SPACE: r"\s",
    _c.CATEGORY_NOT_SPACE: r"\S", _c.CATEGORY_WORD: r"\w", _c.CATEGORY_NOT_WORD: r"\W",
}


def _in_class(items, ch: str) -> bool:
    negate, hit = False, False
    for op, av in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            hit |= chr(av) == ch
        elif op is _c.RANGE:
            hit |= av[0] <= ord(ch) <= av[1]
        elif op is _c.CATEGORY:
            if av not in _CATEGORY:
                raise _Unknown
            hit |= regex.match(_CATEGORY[av], ch) is not None
        else:
            raise _Unknown
    return hit != negate


def _consumes(items, ch: str, dotall: bool, lookbehind: bool = False) -> bool:
    """Can some step of this (sub)pattern consume `ch`? Lookbehinds are skipped: `pos` does not cut
    the string, so they see the same text either way. Raises _Unknown on `$`, `\\Z` and the unknown."""
    for op, av in items:
        if op is _c.LITERAL:
            if chr(av) == ch:
                return True
        elif op is _c.NOT_LITERAL:
            if chr(av) != ch:
                return True
        elif op is _c.ANY:
            if dotall or ch != "\n":
                return True
        elif op is _c.IN:
            if _in_class(av, ch):
                return True
        elif op is _c.AT:
            if av in (_c.AT_END, _c.AT_END_LINE, _c.AT_END_STRING):
                raise _Unknown  # `$` would match at endpos
            if av in (_c.AT_BOUNDARY, _c.AT_NON_BOUNDARY) and regex.match(r"\w", ch):
                raise _Unknown
        elif op is _c.BRANCH:
            if any(_consumes(seq, ch, dotall) for seq in av[1]):
                return True
        elif op is _c.SUBPATTERN:
            _group, add, _del, seq = av
            import re

            if _consumes(seq, ch, dotall or bool(add & re.DOTALL)):
                return True
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
            if av[1] > 0 and _consumes(av[2], ch, dotall):
                return True
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            if _consumes(av, ch, dotall):
                return True
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            direction, seq = av
            if direction == 1 and _consumes(seq, ch, dotall):  # a lookahead may peek past endpos
                return True
        elif op is _c.GROUPREF_EXISTS:
            _group, yes, no = av
            if _consumes(yes, ch, dotall) or (no is not None and _consumes(no, ch, dotall)):
                return True
        else:
            raise _Unknown
    return False


@functools.lru_cache(maxsize=1024)
def barriers(pattern: str, flags: int) -> str:
    """The barrier characters of a pattern ('' when it must be scanned whole)."""
    try:
        parsed = _parse(pattern, flags)
        if parsed.getwidth()[0] == 0:
            return ""
        import re

        dotall = bool(parsed.state.flags & re.DOTALL)
        return "".join(ch for ch in BARRIER_CANDIDATES if not _consumes(parsed, ch, dotall))
    except (_Unknown, RecursionError):
        return ""


@functools.lru_cache(maxsize=1024)
def window_widths(pattern: str, flags: int) -> tuple[int, int] | None:
    """(W, L) for the window mode: the longest match and the longest lookahead; None when a match
    can be empty, has no bound, or the pattern uses `$`, `\\Z` or syntax the analysis does not read."""
    try:
        parsed = _parse(pattern, flags)
        lo, hi = parsed.getwidth()
        if lo == 0 or hi >= _c.MAXREPEAT:
            return None
        ahead = _lookahead_width(list(parsed))
        return None if ahead is None else (hi, ahead)
    except (_Unknown, RecursionError):
        return None


def _lookahead_width(items) -> int | None:
    """The widest lookahead anywhere in the pattern (0 if none); None if unbounded or on `$`/`\\Z`."""
    widest = 0
    for op, av in items:
        subs = []
        if op is _c.AT and av in (_c.AT_END, _c.AT_END_LINE, _c.AT_END_STRING):
            return None
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            direction, seq = av
            if direction == 1:
                hi = seq.getwidth()[1]
                if hi >= _c.MAXREPEAT:
                    return None
                widest = max(widest, hi)
            subs.append(seq)
        elif op is _c.BRANCH:
            subs.extend(av[1])
        elif op is _c.SUBPATTERN:
            subs.append(av[3])
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
            subs.append(av[2])
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            subs.append(av)
        elif op is _c.GROUPREF_EXISTS:
            subs.extend(x for x in av[1:] if x is not None)
        for sub in subs:
            inner = _lookahead_width(list(sub))
            if inner is None:
                return None
            widest = max(widest, inner)
    return widest


def windows(length: int, hits: list[int], before: int, after: int, join: int = 0) -> list[tuple[int, int]]:
    """Merged windows [h - before, h + after) around sorted hits, clipped to the text; windows less than
    `join` apart are merged too (no match starts between them: only the scan's cost changes)."""
    out: list[tuple[int, int]] = []
    for h in hits:
        a, b = max(h - before, 0), min(h + after, length)
        if out and a <= out[-1][1] + join:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


# -- required literals (for `catp rules lint`) ------------------------------------------------------


def required_literals(pattern: str, flags: int) -> list[str] | None:
    """Strings (case-folded) of which every match holds at least one; None when unknown."""
    try:
        parsed = _parse(pattern, flags)
    except _Unknown:
        return None
    found = _required(list(parsed))
    return None if found is None else sorted({fold_anchor(s) for s in found})


def _required(items) -> set[str] | None:
    """Best required set of a sequence: runs of literals, or a required sub-part."""
    options: list[set[str]] = []
    run = ""
    for op, av in items:
        if op is _c.LITERAL and chr(av) != _HAN:
            run += chr(av)
            continue
        if run:
            options.append({run})
            run = ""
        sub = None
        if op is _c.SUBPATTERN:
            sub = _required(list(av[3]))
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            sub = _required(list(av))
        elif op is _c.BRANCH:
            branches = [_required(list(seq)) for seq in av[1]]
            if all(b is not None for b in branches):
                sub = set().union(*branches)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)) and av[0] >= 1:
            sub = _required(list(av[2]))
        if sub:
            options.append(sub)
    if run:
        options.append({run})
    if not options:
        return None
    return max(options, key=lambda s: (min(len(x) for x in s), -len(s)))


def anchors_cover(pattern: str, flags: int, anchors: list[str]) -> bool | None:
    """Does every match of the pattern hold one of the anchors (case-folded)? None: cannot tell."""
    try:
        parsed = _parse(pattern, flags)
    except _Unknown:
        return None
    return _covers(list(parsed), [fold_anchor(a) for a in anchors])


def _covers(items, anchors: list[str]) -> bool:
    """True when every match of this sequence holds an anchor: a run of literals holds one, or a
    part that every match goes through (a group, every branch of an alternation, a repeat of at
    least once) does."""
    run = ""
    for op, av in items:
        if op is _c.LITERAL and chr(av) != _HAN:
            run += _fold_char(chr(av))
            if any(a in run for a in anchors):
                return True
            continue
        run = ""
        if op is _c.IN and all(o is _c.LITERAL for o, _ in av) \
                and all(_fold_char(chr(v)) in anchors for _, v in av):  # [$€£] with anchors $, €, £
            return True
        if op is _c.SUBPATTERN and _covers(list(av[3]), anchors):
            return True
        if op is getattr(_c, "ATOMIC_GROUP", None) and _covers(list(av), anchors):
            return True
        if op is _c.BRANCH and all(_covers(list(seq), anchors) for seq in av[1]):
            return True
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)) and av[0] >= 1 \
                and _covers(list(av[2]), anchors):
            return True
    return False


# -- case folding ---------------------------------------------------------------------------------


def fold_anchor(anchor: str) -> str:
    return "".join(_fold_char(c) for c in anchor)


@functools.lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    low = ch.lower()
    return low if len(low) == 1 else ch


@functools.lru_cache(maxsize=4096)
def _case_class(ch: str) -> frozenset[str]:
    """Every character that `regex` (IGNORECASE) may match for `ch`, closed under that relation."""
    import regex._regex as _r

    flags = regex.IGNORECASE | regex.V0
    seen, todo = set(), [ch, ch.lower() if len(ch.lower()) == 1 else ch, ch.upper() if len(ch.upper()) == 1 else ch]
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        todo.extend(chr(o) for o in _r.get_all_cases(flags, ord(c)))
    return frozenset(seen)


def fold_exceptions(anchors) -> dict[int, str]:
    """Characters whose plain lower-casing differs from the anchor character they may match
    (e.g. 'ſ' matches 's', 'K' (Kelvin) 'k', 'ı' and 'İ' 'i'): the haystack maps them over."""
    table: dict[int, str] = {}
    for anchor in anchors:
        for ch in anchor:
            target = _fold_char(ch)
            for c in _case_class(ch):
                if _fold_char(c) != target:
                    table[ord(_fold_char(c))] = target
    return table


# -- per document ---------------------------------------------------------------------------------


class AnchorIndex:
    """One Aho-Corasick pass over the folded text finds every anchor of every anchored rule.

    For the rules in `alternation`, hits are what `finditer` of the IGNORECASE alternation of their
    anchors (longest first) would give: leftmost, longest at that start, not overlapping (the anchor
    scan of `pos` rules)."""

    def __init__(self, anchors_by_rule: dict[str, list[str]], alternation=()) -> None:
        import ahocorasick

        self.rules = list(anchors_by_rule)
        self.alternation = [rid in set(alternation) for rid in self.rules]
        owners: dict[str, list[int]] = {}
        for r, rid in enumerate(self.rules):
            for a in anchors_by_rule[rid]:
                owners.setdefault(fold_anchor(a), []).append(r)
        self.automaton = ahocorasick.Automaton()
        for key, rs in owners.items():
            self.automaton.add_word(key, (len(key), tuple(sorted(set(rs)))))
        if owners:
            self.automaton.make_automaton()
        self.empty = not owners
        exceptions = fold_exceptions(owners)
        self.exceptions = exceptions
        self.exception_chars = [chr(k) for k in exceptions]

    def hits(self, lowered: str) -> dict[str, list[int]]:
        """rule id -> sorted start offsets of its anchors (for `alternation` rules: of the matches)."""
        if self.empty:
            return {}
        out: list[list] = [[] for _ in self.rules]
        haystack = lowered
        if any(c in lowered for c in self.exception_chars):  # `in` per character: faster than a class search
            haystack = lowered.translate(self.exceptions)
        alternation = self.alternation
        for last, (length, rs) in self.automaton.iter(haystack):
            start = last - length + 1
            for r in rs:
                out[r].append((start, -length) if alternation[r] else start)
        result = {}
        for r, rid in enumerate(self.rules):
            h = out[r]
            if alternation[r]:
                h.sort()
                starts, cursor = [], 0
                for start, neg in h:  # at each start the longest anchor comes first
                    if start >= cursor:
                        starts.append(start)
                        cursor = start - neg
                result[rid] = starts
            else:
                result[rid] = sorted(set(h)) if len(h) > 1 else h
        return result


def stretches(text: str, barrier_positions: list[int], hits: list[int]) -> list[tuple[int, int]]:
    """The barrier-free stretches [a, b) holding the hits (sorted, distinct)."""
    out: list[tuple[int, int]] = []
    n, last_i = len(barrier_positions), -2
    for h in hits:
        i = bisect_right(barrier_positions, h)  # barrier_positions[i-1] < h... (h itself may be one)
        if i == last_i:
            continue
        last_i = i
        a = barrier_positions[i - 1] + 1 if i > 0 else 0
        b = barrier_positions[i] if i < n else len(text)
        if out and out[-1][1] >= a:  # h sits on a barrier: merge with the previous stretch
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
