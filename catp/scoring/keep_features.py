"""What the keep-model reads of a unit: its characters, its neighbours', its section title's, and the rules.

Text features are hashed character n-grams (1 to 4 characters, lower-cased ASCII, every digit read as 0),
the same for Chinese and English. Each of four weight tables scores one view of a unit: its own text, the
unit before, the unit after and the heading of its section; a unit's view score is the sum of its n-grams'
weights over the square root of their count. Rule and layout features (`unit_features`) are named strings
with one weight each. Training (train/keep_model.py) and scoring (catp/scoring/keep.py) both build their
features here, so they cannot drift apart.
"""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np

from catp.document import Action, Document, UnitKind

NGRAMS = (1, 2, 3, 4)
VIEWS = ("self", "prev", "next", "section")  # the four weight tables, in this order
_PRIME = np.uint64(0x100000001B3)  # FNV-1's 64-bit prime
_MIX = np.uint64(0x9E3779B97F4A7C15)  # multiply-shift hashing (Fibonacci)
_SPACES = np.array([9, 10, 11, 12, 13, 32, 0xA0, 0x3000], dtype=np.uint64)


def normalized_codes(text: str) -> np.ndarray:
    """One code per character (same length as the text): ASCII lower-cased, digits (ASCII and full-width)
    as '0', whitespace as ' '."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    codes[(codes >= 65) & (codes <= 90)] += np.uint64(32)
    codes[((codes >= 48) & (codes <= 57)) | ((codes >= 0xFF10) & (codes <= 0xFF19))] = 48
    codes[np.isin(codes, _SPACES)] = 32
    return codes


def gram_buckets(codes: np.ndarray, n: int, bits: int) -> np.ndarray:
    """The hash bucket (0 .. 2**bits - 1) of the n-gram starting at each position (len(codes) - n + 1 of
    them)."""
    count = len(codes) - n + 1
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    h = np.full(count, n, dtype=np.uint64)
    for k in range(n):
        h = h * _PRIME + codes[k : k + count]  # wraps modulo 2**64, as meant
    return ((h * _MIX) >> np.uint64(64 - bits)).astype(np.int64)


def unit_bounds(doc: Document) -> tuple[np.ndarray, np.ndarray]:
    units = doc.units
    return (np.fromiter((u.start for u in units), dtype=np.int64, count=len(units)),
            np.fromiter((u.end for u in units), dtype=np.int64, count=len(units)))


def gram_counts(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """How many n-grams (all n) lie wholly inside each unit."""
    total = np.zeros(len(starts), dtype=np.float64)
    for n in NGRAMS:
        total += np.maximum(ends - starts - n + 1, 0)
    return total


def view_scores(buckets: dict[int, np.ndarray], starts: np.ndarray, ends: np.ndarray,
                table: np.ndarray) -> np.ndarray:
    """Per unit, sum of its n-grams' weights in `table` / sqrt(their count): the linear model's text score."""
    total = np.zeros(len(starts), dtype=np.float64)
    for n, where in buckets.items():
        summed = np.concatenate(([0.0], np.cumsum(table[where], dtype=np.float64)))
        last = np.maximum(ends - n + 1, starts)  # grams start in [start, end - n + 1)
        total += summed[np.minimum(last, len(where))] - summed[np.minimum(starts, len(where))]
    return total / np.sqrt(np.maximum(gram_counts(starts, ends), 1.0))


def text_buckets(text: str, bits: int) -> dict[int, np.ndarray]:
    codes = normalized_codes(text)
    return {n: gram_buckets(codes, n, bits) for n in NGRAMS}


def neighbours(doc: Document) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each unit: the live unit before it, the live unit after it and the heading above it (-1: none).
    Deleted (boilerplate) units are skipped: they never reach the extract."""
    n = len(doc.units)
    deleted = doc.columns.deleted or [False] * n
    prev, nxt, section = np.full(n, -1), np.full(n, -1), np.full(n, -1)
    last = heading = -1
    for i, unit in enumerate(doc.units):
        prev[i], section[i] = last, heading
        if not deleted[i]:
            if last >= 0:
                nxt[last] = i
            last = i
        if unit.kind is UnitKind.HEADING:
            heading = i
    return prev, nxt, section


def _bin(value: float, edges: tuple[float, ...]) -> int:
    return bisect_right(edges, value)


_DIGIT_EDGES = (0.0001, 0.05, 0.15, 0.3)


def unit_features(doc: Document) -> list[list[str]]:
    """Per unit, its named rule and layout features: the categories and actions of the rule spans over it
    (and over its neighbours), its protecting priority, whether a rule keeps it whole, its key section, its
    kind, where it stands, its length, its share of digits, and the document's language and domain."""
    units, text, columns = doc.units, doc.text, doc.columns
    n = len(units)
    starts = [u.start for u in units]
    cats: list[set[str]] = [set() for _ in units]
    for span in doc.spans:
        first = max(bisect_right(starts, span.start) - 1, 0)
        last = max(bisect_right(starts, max(span.end - 1, span.start)) - 1, first)
        tag = f"{span.category}/{span.action.value}" if span.action is not Action.PROTECT else span.category
        for i in range(first, min(last, n - 1) + 1):
            cats[i].add(tag)
    keyed: list[list[str]] = [[] for _ in units]
    for section in doc.key_sections:
        for i in range(section.first, min(section.end, n)):
            keyed[i].append(f"key:{section.name}")
        if section.title < n:
            keyed[section.title].append("key_title")
    prev, nxt, _ = neighbours(doc)
    size = max(len(text), 1)
    lang, domain = f"lang:{doc.lang}", f"domain:{doc.domain}"
    out = []
    for i, unit in enumerate(units):
        piece = text[unit.start : unit.end]
        chars = max(len(piece), 1)
        digits = sum(c.isdigit() for c in piece) / chars
        tokens = max(unit.tokens, 1)
        names = ["bias", lang, domain, f"kind:{unit.kind.value}", f"pos:{min(int(10 * unit.start / size), 9)}",
                 f"tokens:{min(int(math.log2(tokens)), 9)}", f"digits:{_bin(digits, _DIGIT_EDGES)}",
                 f"priority:{columns.priority[i] // 10}"]
        if unit.start < 0.02 * size:
            names.append("opening")
        if columns.group and columns.group[i] != -1:
            names.append("whole")
        if columns.boost and columns.boost[i]:
            names.append("boosted")
        names.extend(f"cat:{c}" for c in sorted(cats[i]))
        names.extend(f"cat:{c}|{lang}" for c in sorted(cats[i]))
        names.extend(sorted(set(keyed[i])))
        if prev[i] >= 0:
            names.extend(f"prev:{c}" for c in sorted(cats[prev[i]]))
        if nxt[i] >= 0:
            names.extend(f"next:{c}" for c in sorted(cats[nxt[i]]))
        out.append(names)
    return out
