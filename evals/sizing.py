"""How big a text is: Qwen tokens, or non-whitespace characters (`--size chars`).

A `DocSize` answers, for one document, "how big is text[a:b]" and "how far can a
head (or tail) reach within a budget" so that baselines cut at exact sizes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate


def nonws_prefix(text: str) -> list[int]:
    """prefix[i] = non-whitespace characters in text[:i]."""
    return [0, *accumulate(0 if ch.isspace() else 1 for ch in text)]


def nonws_count(text: str) -> int:
    return sum(1 for ch in text if not ch.isspace())


class CharSize:
    """Sizes in non-whitespace characters (the shared README's measure)."""

    unit = "chars"

    def __init__(self, text: str) -> None:
        self.text = text
        self.prefix = nonws_prefix(text)
        self.total = self.prefix[-1]

    def of(self, text: str) -> int:
        return nonws_count(text)

    def head_end(self, budget: float) -> int:
        """Largest end with size(text[:end]) <= budget."""
        return max(bisect_right(self.prefix, budget) - 1, 0)

    def tail_start(self, budget: float, not_before: int = 0) -> int:
        """Smallest start with size(text[start:]) <= budget."""
        return max(bisect_left(self.prefix, self.total - budget), not_before)

    def pieces(self, spans: list[tuple[int, int]]) -> list[int]:
        return [self.prefix[e] - self.prefix[s] for s, e in spans]


class TokenSize:
    """Sizes in the tokenizer of a `catp.tokens.TokenCounter` (count + token_starts)."""

    unit = "tokens"

    def __init__(self, text: str, counter) -> None:
        self.text = text
        self.counter = counter
        self.starts = counter.token_starts(text)
        self.total = len(self.starts)

    def of(self, text: str) -> int:
        return self.counter.count(text)

    def head_end(self, budget: float) -> int:
        n = int(budget)
        if n >= self.total:
            return len(self.text)
        end = self.starts[n] if n > 0 else 0
        while end > 0:  # BPE at the cut can merge differently: recount, step back by the excess
            over = self.of(self.text[:end]) - n
            if over <= 0:
                break
            end = self.starts[max(bisect_left(self.starts, end) - over, 0)]
        return end

    def tail_start(self, budget: float, not_before: int = 0) -> int:
        n = int(budget)
        if n >= self.total:
            return not_before
        start = self.starts[self.total - n] if n > 0 else len(self.text)
        while start < len(self.text):
            over = self.of(self.text[start:]) - n
            if over <= 0:
                break
            # several byte-level tokens can start at one character: step past that offset
            i = bisect_right(self.starts, start) + over - 1
            start = self.starts[i] if i < self.total else len(self.text)
        return max(start, not_before)

    def pieces(self, spans: list[tuple[int, int]]) -> list[int]:
        """Tokens per span: those starting inside it (whitespace before a span is charged to it)."""
        return [bisect_left(self.starts, e) - bisect_left(self.starts, s) for s, e in spans]


def doc_size(unit: str, text: str, counter=None):
    if unit == "chars":
        return CharSize(text)
    if unit == "tokens":
        if counter is None:
            raise ValueError("token sizes need a token counter")
        return TokenSize(text, counter)
    raise ValueError(f"unknown size unit {unit!r}; use tokens or chars")
