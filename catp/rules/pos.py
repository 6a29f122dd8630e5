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


def match(rule: PosRule, text: str, start: int, end: int, lang: str,
          cache: dict | None = None) -> Iterator[tuple[int, int]]:
    """Yield (start, end) character spans in text[start:end] matching the rule's tokens.
    `cache` (one dict per document) keeps the tagger's output for repeated text blocks."""
    if lang == "zh":
        yield from _match_zh(rule, text, start, end, {} if cache is None else cache)
    else:
        yield from _match_en(rule, text, start, end)


def _tag_block(block: str, cache: dict) -> list[tuple[str, str]]:
    tagged = cache.get(block)
    if tagged is None:
        tagged = cache[block] = [(p.word, p.flag) for p in _jieba_posseg().cut(block, HMM=True)]
    return tagged


def _match_zh(rule: PosRule, text: str, start: int, end: int, cache: dict) -> Iterator[tuple[int, int]]:
    """jieba.posseg tags a text block by block (its own `re_han_internal.split`), each block on its
    own; so only the blocks that can hold a match need tagging: those containing one of the first
    token's words, plus enough following blocks for the rest of the pattern. The tokens, and so the
    matches, are exactly those of tagging the whole sentence."""
    specs = rule.tokens
    first = specs[0]
    sentence = text[start:end]
    if not first.words or first.optional:
        tokens = _tokens(_jieba_posseg().cut(sentence, HMM=True), start)
        yield from _scan(specs, tokens)
        return
    words = first.words
    tail = len(specs) - 1  # tokens a match may take after its first one
    region: list[tuple[int, int, str, str]] = []
    pending = -1  # tokens still wanted after the last anchored block; < 0: no open region
    offset = start
    for block in _jieba_posseg().re_han_internal.split(sentence):
        if not block:
            continue
        anchored = any(w in block for w in words)
        if anchored or pending > 0:
            for word, flag in _tag_block(block, cache):
                region.append((offset, offset + len(word), word, flag))
                offset += len(word)
                pending -= 1
            if anchored:
                pending = tail
        else:
            if region:
                yield from _scan(specs, region)
                region = []
            pending = -1
            offset += len(block)
    if region:
        yield from _scan(specs, region)


def _tokens(pairs, offset: int) -> list[tuple[int, int, str, str]]:
    tokens: list[tuple[int, int, str, str]] = []  # (start, end, word, flag)
    for pair in pairs:
        word, flag = pair.word, pair.flag
        tokens.append((offset, offset + len(word), word, flag))
        offset += len(word)
    return tokens


def _scan(specs: list[PosToken], tokens: list[tuple[int, int, str, str]]) -> Iterator[tuple[int, int]]:
    """Leftmost, non-overlapping, greedy matches over a token list."""
    i = 0
    while i < len(tokens):
        n = _match_at(specs, tokens, i)
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


_EN_BY_RULE: dict[int, tuple[PosRule, object]] = {}  # id(rule) -> (rule, matcher): skips the JSON key


def _en_matcher(rule: PosRule):
    hit = _EN_BY_RULE.get(id(rule))
    if hit is not None and hit[0] is rule:
        return hit[1]
    key = rule.model_dump_json()
    matcher = _EN_MATCHERS.get(key)
    if matcher is None:
        from spacy.matcher import Matcher

        matcher = Matcher(_spacy_en().vocab)
        matcher.add(rule.id, [_en_pattern(rule.tokens)])
        _EN_MATCHERS[key] = matcher
    _EN_BY_RULE[id(rule)] = (rule, matcher)
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
