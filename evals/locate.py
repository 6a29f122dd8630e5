"""Find an excerpt in a document while ignoring whitespace differences (PDF text, line breaks)."""

from __future__ import annotations


class WhitespaceIndex:
    """The text with whitespace removed, plus where each kept character came from."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.positions = [i for i, ch in enumerate(text) if not ch.isspace()]
        self.squeezed = "".join(text[i] for i in self.positions)

    def find(self, excerpt: str, start: int = 0) -> tuple[int, int] | None:
        """(start, end) offsets in the original text of the first match at or after `start`."""
        needle = "".join(excerpt.split())
        if not needle:
            return None
        from_pos = _first_at_or_after(self.positions, start)
        i = self.squeezed.find(needle, from_pos)
        if i < 0:
            return None
        return self.positions[i], self.positions[i + len(needle) - 1] + 1


def _first_at_or_after(positions: list[int], offset: int) -> int:
    from bisect import bisect_left

    return bisect_left(positions, offset)
