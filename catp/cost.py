"""The cost stage: each unit's price in budget tokens, and what the gap marker saves next to it."""

from __future__ import annotations

from bisect import bisect_left

from catp.document import Analysis
from catp.tokens import TokenCounter


class MarkerMerge:
    """`merge(char)`: how many tokens the gap marker followed by `char` saves on the two counted apart (Qwen: 1
    for a letter or a mark, which takes the marker's last space into its token; 0 for a digit). Each character
    is counted once."""

    __slots__ = ("tokens", "gap_marker", "gap_tokens", "known")

    def __init__(self, tokens: TokenCounter, gap_marker: str) -> None:
        self.tokens, self.gap_marker = tokens, gap_marker
        self.gap_tokens = tokens.count(gap_marker)
        self.known: dict[str, int] = {}

    def __call__(self, char: str) -> int:
        merge = self.known.get(char)
        if merge is None:
            merge = self.known[char] = (self.gap_tokens + self.tokens.count(char)
                                        - self.tokens.count(self.gap_marker + char))
        return merge


def cost_units(doc: Analysis, token_starts: list[int], marker_merge) -> None:
    """Each unit owns the tokens that start in it or in the whitespace before it: those starting at or
    after the previous unit's end and before its own (found by bisecting the sorted token starts).
    A run of kept units in the output does not start with that whitespace: the unit's `edge` is what its
    first unit then saves, the tokens starting in the whitespace less one when the last of them runs into
    the unit (" Bar": the unit still needs a token for "Bar"), or -1 when a token of the unit before runs
    into it. `marker_merge(c)` says whether the gap marker's last token joins a first character c."""
    before, end = 0, 0  # tokens starting before the previous unit's end; that end
    n = len(token_starts)
    text = doc.text
    for unit in doc.units:
        # Each search looks at the next few starts only (a token holds at least one of the text's UTF-8
        # bytes, at most 4 per character), and at the rest if its answer is the stretch's end: at 1M
        # tokens, searches over the whole list miss the caches at every step.
        start = unit.start
        hi = min(before + 4 * (start - end) + 1, n)
        first = bisect_left(token_starts, start, before, hi)  # its first token starting in the unit
        if first == hi < n:
            first = bisect_left(token_starts, start, hi)
        end = unit.end
        hi = min(first + 4 * (end - start) + 1, n)
        upto = bisect_left(token_starts, end, first, hi)
        if upto == hi < n:
            upto = bisect_left(token_starts, end, hi)
        unit.tokens = upto - before
        unit.edge = first - before - (first == n or token_starts[first] != start)
        unit.marker_merge = marker_merge(text[start])
        before = upto
