"""Part-of-speech token patterns: jieba.posseg (zh) and spaCy blank + Matcher (en).

No trained English pipeline is available offline, so English patterns use word
lists (lexicons) and token shapes instead of tags. Both taggers load lazily.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import lru_cache

from catp.rules.schema import PosRule, PosToken


@lru_cache(maxsize=1)
def _jieba_posseg():
    import jieba
    import jieba.posseg as posseg

    jieba.setLogLevel(logging.WARNING)
    return posseg


@lru_cache(maxsize=1)
def _spacy_en():
    import spacy

    return spacy.blank("en")


def match(rule: PosRule, text: str, start: int, end: int, lang: str) -> Iterator[tuple[int, int]]:
    """Yield (start, end) character spans in text[start:end] matching the rule's tokens."""
    if lang == "zh":
        yield from _match_zh(rule, text, start, end)
    else:
        yield from _match_en(rule, text, start, end)


def _match_zh(rule: PosRule, text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    tokens: list[tuple[int, int, str, str]] = []  # (start, end, word, flag)
    offset = start
    for pair in _jieba_posseg().cut(text[start:end], HMM=True):
        word, flag = pair.word, pair.flag
        tokens.append((offset, offset + len(word), word, flag))
        offset += len(word)
    i = 0
    while i < len(tokens):
        n = _match_at(rule.tokens, tokens, i)
        if n:
            yield tokens[i][0], tokens[i + n - 1][1]
            i += n
        else:
            i += 1


def _token_ok(spec: PosToken, word: str, flag: str) -> bool:
    if spec.words and word not in spec.words:
        return False
    if spec.pos and not any(flag.startswith(p) for p in spec.pos):
        return False
    if spec.shape == "digit" and not any(ch.isdigit() for ch in word):
        return False
    return not word.isspace()


def _match_at(specs: list[PosToken], tokens, i: int) -> int:
    """Greedy left-to-right match with optional tokens; returns tokens consumed (0 = none)."""
    j = i
    for spec in specs:
        if j < len(tokens) and _token_ok(spec, tokens[j][2], tokens[j][3]):
            j += 1
        elif not spec.optional:
            return 0
    return j - i


_EN_MATCHERS: dict[str, object] = {}


def _en_matcher(rule: PosRule):
    key = rule.model_dump_json()
    matcher = _EN_MATCHERS.get(key)
    if matcher is None:
        from spacy.matcher import Matcher

        matcher = Matcher(_spacy_en().vocab)
        matcher.add(rule.id, [_en_pattern(rule.tokens)])
        _EN_MATCHERS[key] = matcher
    return matcher


def _en_pattern(specs: list[PosToken]) -> list[dict]:
    out = []
    for spec in specs:
        attrs: dict = {}
        if spec.words:
            attrs["LOWER"] = {"IN": [w.lower() for w in spec.words]}
        if spec.shape == "alpha":
            attrs["IS_ALPHA"] = True
        elif spec.shape == "capitalized":
            attrs["IS_TITLE"] = True
        elif spec.shape == "digit":
            attrs["LIKE_NUM"] = True
        if spec.optional:
            attrs["OP"] = "?"
        out.append(attrs)
    return out


def _match_en(rule: PosRule, text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    doc = _spacy_en().make_doc(text[start:end])
    spans = sorted((doc[s:e].start_char, doc[s:e].end_char) for _, s, e in _en_matcher(rule)(doc))
    last = -1
    for a, b in spans:  # leftmost, non-overlapping
        if a >= last:
            yield start + a, start + b
            last = b
