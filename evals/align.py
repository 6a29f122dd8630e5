"""Align a token-level compressor's output (LLMLingua, LongLLMLingua, LLMLingua-2) back to input offsets.

Such output is the input with tokens dropped, in order: whole contexts, words, and pieces inside words (a
Chinese clause or an English number can lose a token in its middle). So the output, whitespace aside, is a
sequence of pieces of the input, in order. Matching each piece at its first occurrence after the last match
goes wrong when a piece also occurs further on: a fragment such as "EN1046" (of "EN100466") found whole in
"EN104655" twenty pages later moves the match past everything in between.

So the alignment is anchored first. Both texts are compacted (whitespace removed, offsets kept). Every
ANCHOR-character gram of the output that occurs exactly once in the input is a candidate anchor; the longest
chain of candidates increasing in both texts is kept (as patience diff does with unique lines), and a
candidate out of order with its neighbours is dropped. Between two anchors, the output is matched piece by
piece inside the input between them: the longest prefix found, then the rest; a single character only
within NEAR characters of the last match.

`fit` then renders the aligned spans within the budget, cut at the end.
"""

from __future__ import annotations

from bisect import bisect_left

from evals.methods import Budget, Outcome, render

ANCHOR = 6  # characters of an output gram that must occur once in the input to anchor the alignment
NEAR = 8  # a one-character piece counts only this close after the last match


def align_output(original: str, compressed: str) -> list[tuple[int, int]]:
    """Spans of `original`, in order and not overlapping, that hold the text of `compressed`."""
    source, source_at = _compact(original)
    output, _ = _compact(compressed)
    runs = _anchor_runs(source, output)
    pieces: list[tuple[int, int]] = []  # (start in source, length)
    done_out, done_src = 0, 0
    for out_at, src_at, length in [*runs, (len(output), len(source), 0)]:
        pieces += _fill(source, output[done_out:out_at], done_src, src_at)
        if length:
            pieces.append((src_at, length))
        done_out, done_src = out_at + length, src_at + length
    return [(source_at[start], source_at[start + length - 1] + 1) for start, length in pieces]


def fit(text: str, spans: list[tuple[int, int]], budget: Budget, size) -> Outcome:
    """Render the kept text, cut at the end to the longest start of it whose size fits the budget."""
    out = render(text, spans, separator=" ")
    if size.of(out.text) <= budget.limit:
        return out
    merged = out.kept
    ends = [(n, end) for n, (start, stop) in enumerate(merged) for end in range(start + 1, stop + 1)
            if end == stop or text[end].isspace() or not _in_word(text[end - 1])]  # not inside a word

    def cut(k: int) -> Outcome:
        n, end = ends[k]
        return render(text, [*merged[:n], (merged[n][0], end)], separator=" ")

    lo, hi = -1, len(ends) - 1  # the last cut that fits is in [lo, hi] (-1: none; the last cut is the whole)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size.of(cut(mid).text) <= budget.limit:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo) if lo >= 0 else render(text, [], separator=" ")


def _in_word(ch: str) -> bool:
    """A Latin letter or digit: a cut after it may split a word (a cut after a CJK character does not)."""
    return ch.isascii() and ch.isalnum()


def _compact(text: str) -> tuple[str, list[int]]:
    """The text without whitespace, and each kept character's offset in the text."""
    at = [i for i, ch in enumerate(text) if not ch.isspace()]
    return "".join(text[i] for i in at), at


def _anchor_runs(source: str, output: str) -> list[tuple[int, int, int]]:
    """(start in output, start in source, length) of the anchored stretches, in order in both texts."""
    first: dict[str, int] = {}
    for i in range(len(source) - ANCHOR + 1):
        gram = source[i:i + ANCHOR]
        first[gram] = -1 if gram in first else i
    candidates = [(j, i) for j in range(len(output) - ANCHOR + 1)
                  if (i := first.get(output[j:j + ANCHOR], -1)) >= 0]
    runs: list[tuple[int, int, int]] = []
    for j, i in _increasing_chain(candidates):
        if runs:
            out_at, src_at, length = runs[-1]
            if j - i == out_at - src_at and j <= out_at + length:  # the same stretch, one more gram
                runs[-1] = (out_at, src_at, max(length, j + ANCHOR - out_at))
                continue
            cut = max(0, out_at + length - j, src_at + length - i)  # overlaps the last stretch: start after it
            if cut >= ANCHOR:
                continue
            j, i = j + cut, i + cut
            runs.append((j, i, ANCHOR - cut))
        else:
            runs.append((j, i, ANCHOR))
    return runs


def _increasing_chain(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest chain of (j, i) pairs, given in increasing j, with i increasing too (first such chain)."""
    tails: list[int] = []  # tails[k]: the smallest i that ends a chain of k + 1 pairs
    ends: list[int] = []  # ends[k]: index in pairs of that chain's last pair
    before = [-1] * len(pairs)
    for n, (_, i) in enumerate(pairs):
        k = bisect_left(tails, i)
        if k == len(tails):
            tails.append(i)
            ends.append(n)
        else:
            tails[k], ends[k] = i, n
        before[n] = ends[k - 1] if k else -1
    chain, n = [], ends[-1] if ends else -1
    while n >= 0:
        chain.append(pairs[n])
        n = before[n]
    return chain[::-1]


def _fill(source: str, piece: str, start: int, end: int) -> list[tuple[int, int]]:
    """Match `piece` in order inside source[start:end]: longest prefixes first (see the module docstring)."""
    found, cursor, j = [], start, 0
    while j < len(piece):
        length, at = _longest_prefix_found(source, piece, j, cursor, end)
        if length == 0:
            j += 1
            continue
        if length > 1 or at - cursor <= NEAR:
            found.append((at, length))
            cursor = at + length
        j += length
    return found


def _longest_prefix_found(source: str, piece: str, start: int, cursor: int, end: int) -> tuple[int, int]:
    """(n, where) for the longest piece[start:start + n] inside source[cursor:end], first at `where`;
    (0, -1) when none is (binary search: a prefix of a found string is found too)."""
    lo, hi, where = 0, len(piece) - start, -1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        found = source.find(piece[start:start + mid], cursor, end)
        if found >= 0:
            lo, where = mid, found
        else:
            hi = mid - 1
    return lo, where
