"""Part-of-speech token patterns: jieba.posseg (zh) and spaCy blank + Matcher (en).

No trained English pipeline is available offline, so English patterns use word
lists (lexicons) and token shapes instead of tags. Both taggers load lazily.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right
from collections.abc import Iterator
from functools import lru_cache
from math import log

from catp.rules.schema import PosRule, PosToken


@lru_cache(maxsize=1)
def jieba_posseg():
    """The jieba.posseg module, loaded once (quietly)."""
    import jieba
    import jieba.posseg as posseg

    jieba.setLogLevel(logging.WARNING)
    return posseg


@lru_cache(maxsize=1)
def _spacy_en():
    import sys

    # spaCy imports thinc, whose compat module imports torch when it is installed (~1 s and ~150 MB),
    # though a blank tokenizer and the Matcher never use it. Hide torch during that import unless it
    # is already loaded; `import torch` works again afterwards (the LM scorer's own import is untouched).
    hide = "torch" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # makes `import torch` raise ImportError
    try:
        import spacy
    finally:
        if hide and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return spacy.blank("en")


def match(rule: PosRule, text: str, start: int, end: int, lang: str,
          cache: dict | None = None) -> Iterator[tuple[int, int]]:
    """Yield (start, end) character spans in text[start:end] matching the rule's tokens.
    `cache` (one dict per document) keeps the tagger's output for repeated text blocks."""
    if lang == "zh":
        yield from _match_zh(rule, text, start, end, {} if cache is None else cache)
    else:
        yield from _match_en(rule, text, start, end)


def match_each(rule: PosRule, text: str, sentences: list[tuple[int, int]], lang: str,
               cache: dict | None = None) -> list[list[tuple[int, int]]]:
    """[list(match(rule, text, a, b, lang, cache)) for a, b in sentences], with one spaCy pass over the
    windows of all the sentences for en (see _match_en_each)."""
    if lang == "zh":
        cache = {} if cache is None else cache
        return [list(_match_zh(rule, text, a, b, cache)) for a, b in sentences]
    return _match_en_each(rule, text, sentences)


def _tag_block(block: str, cache: dict) -> list[tuple[str, str]]:
    key = ("block", block)
    tagged = cache.get(key)
    if tagged is None:
        tagged = cache[key] = [(p.word, p.flag) for p in jieba_posseg().cut(block, HMM=True)]
    return tagged


def jieba_route_ok() -> bool:
    """jieba 0.42.1's POSTokenizer internals that _han_segments and route_ends mirror are present."""
    dt = getattr(jieba_posseg(), "dt", None)
    return all(hasattr(dt, a) for a in ("tokenizer", "word_tag_tab", "makesure_userdict_loaded",
                                        "_POSTokenizer__cut_detail")) and \
        all(hasattr(dt.tokenizer, a) for a in ("check_initialized", "FREQ", "total"))


def _han_segments(block: str, cache: dict) -> list[tuple[str, bool]]:
    """How jieba.posseg cuts one Han block before tagging (POSTokenizer.__cut_DAG): the dictionary route
    gives words, and runs of one-character steps (buffers). Each piece is tagged on its own: a word by
    its dictionary tag, a buffer by the HMM (__cut_detail) unless it is a word. (text, is_word) pairs."""
    key = ("route", block)
    segments = cache.get(key)
    if segments is None:
        ends = route_ends(block, cache.setdefault("word_logp", {}))
        segments, x, buf, n = [], 0, None, len(block)
        while x < n:
            y = ends[x] + 1
            if y - x == 1:
                if buf is None:
                    buf = x
            else:
                if buf is not None:
                    segments.append((block[buf:x], False))
                    buf = None
                segments.append((block[x:y], True))
            x = y
        if buf is not None:
            segments.append((block[buf:], False))
        cache[key] = segments
    return segments


def route_ends(block: str, word_logp: dict | None = None) -> list[int]:
    """route[x][1] of jieba's Tokenizer.get_DAG + calc for each start x: where the best route's word
    from x ends. One right-to-left pass over the same dictionary words, with the same sums in the same
    order and the same tie-break (max over (value, end) tuples: on equal values the later end wins).
    `word_logp` (one dict per document) remembers each fragment's log(freq) - log(total) (None: a prefix
    of a word, frequency 0), so a fragment's dictionary lookup and log are paid once."""
    dt = jieba_posseg().dt
    dt.makesure_userdict_loaded()
    dt.tokenizer.check_initialized()
    freq, logtotal = dt.tokenizer.FREQ, log(dt.tokenizer.total)
    word_logp = {} if word_logp is None else word_logp
    remembered = word_logp.get
    n = len(block)
    value = [0.0] * (n + 1)  # route[x][0]
    ends = [0] * n
    for k in range(n - 1, -1, -1):
        best, end = None, k
        i, frag = k, block[k]
        while i < n:  # the words of the DAG from k (a prefix of one has frequency 0)
            logp = remembered(frag, _UNSEEN)
            if logp is _UNSEEN:
                f = freq.get(frag)
                if f is None:
                    break
                logp = word_logp[frag] = log(f) - logtotal if f else None
            if logp is not None:
                v = logp + value[i + 1]
                if best is None or v >= best:
                    best, end = v, i
            i += 1
            frag = block[k : i + 1]
        if best is None:  # no word from k: the character alone, frequency 1 (jieba's `or 1`)
            best = log(1) - logtotal + value[k + 1]
        value[k], ends[k] = best, end
    return ends


_UNSEEN = object()


def _tag_segment(text: str, is_word: bool, cache: dict) -> list[tuple[str, str]]:
    """The tokens jieba.posseg yields for one piece of _han_segments (same branches as __cut_DAG)."""
    dt = jieba_posseg().dt
    if is_word or len(text) == 1:
        return [(text, dt.word_tag_tab.get(text, "x"))]
    if dt.tokenizer.FREQ.get(text):
        return [(ch, dt.word_tag_tab.get(ch, "x")) for ch in text]
    key = ("hmm", text)
    tagged = cache.get(key)
    if tagged is None:
        tagged = cache[key] = cut_detail(text)
    return tagged


MIN_FLOAT, MIN_INF = -3.14e100, float("-inf")  # jieba.posseg.viterbi's


@lru_cache(maxsize=1)
def hmm_tables():
    """jieba.posseg's HMM tables, plus each state's predecessors (None: use jieba's own code)."""
    posseg = jieba_posseg()
    names = ("char_state_tab_P", "start_P", "trans_P", "emit_P", "re_han_detail", "re_skip_detail", "re_num",
             "re_eng")
    if not all(hasattr(posseg, n) for n in names):
        return None
    trans = posseg.trans_P
    pred: dict = {}
    for x, following in trans.items():
        for y in following:
            pred.setdefault(y, set()).add(x)
    return posseg, {y: frozenset(xs) for y, xs in pred.items()}, frozenset(x for x, f in trans.items() if f)


def cut_detail(text: str) -> list[tuple[str, str]]:
    """What jieba.posseg's POSTokenizer.__cut_detail yields for `text`, with a faster Viterbi."""
    tables = hmm_tables()
    if tables is None:
        return [(p.word, p.flag) for p in jieba_posseg().dt._POSTokenizer__cut_detail(text)]
    posseg = tables[0]
    out: list[tuple[str, str]] = []
    for blk in posseg.re_han_detail.split(text):
        if posseg.re_han_detail.match(blk):
            out.extend(_cut_hmm(blk, tables))
            continue
        for x in posseg.re_skip_detail.split(blk):
            if x:
                out.append((x, "m" if posseg.re_num.match(x) else "eng" if posseg.re_eng.match(x) else "x"))
    return out


def _cut_hmm(sentence: str, tables) -> list[tuple[str, str]]:
    """POSTokenizer.__cut: words from the Viterbi path's B/M/E/S states."""
    pos_list = _viterbi(sentence, tables)
    out, begin, nexti = [], 0, 0
    for i, char in enumerate(sentence):
        state = pos_list[i][0]
        if state == "B":
            begin = i
        elif state == "E":
            out.append((sentence[begin : i + 1], pos_list[i][1]))
            nexti = i + 1
        elif state == "S":
            out.append((char, pos_list[i][1]))
            nexti = i + 1
    if nexti < len(sentence):
        out.append((sentence[nexti:], pos_list[nexti][1]))
    return out


def _viterbi(obs: str, tables) -> list:
    """jieba.posseg.viterbi.viterbi, the same sums in the same order and the same tie-breaks, but a
    state is only compared with the previous states that can lead to it (the others give -inf,
    which never wins while one of them is finite: every path value is finite). Orders of iteration
    do not matter: each max() compares (value, state) tuples, as jieba's does."""
    posseg, pred, has_next = tables
    states, start_p, trans_p, emit_p = posseg.char_state_tab_P, posseg.start_P, posseg.trans_P, posseg.emit_P
    all_states = trans_p.keys()
    empty: frozenset = frozenset()
    values = {}
    first = {}
    for y in states.get(obs[0], all_states):
        values[y] = start_p[y] + emit_p[y].get(obs[0], MIN_FLOAT)
        first[y] = ""
    paths = [first]
    for t in range(1, len(obs)):
        ch = obs[t]
        prev = [x for x in paths[-1] if x in has_next]
        prev_set = set(prev)
        obs_states = [y for y in states.get(ch, all_states) if not pred.get(y, empty).isdisjoint(prev_set)]
        if not obs_states:
            following = {y for x in prev for y in trans_p[x]}
            obs_states = following if following else all_states
        new_values, path = {}, {}
        for y in obs_states:
            emit = emit_p[y].get(ch, MIN_FLOAT)
            sources = pred.get(y, empty) & prev_set  # max() below does not depend on their order
            if sources:
                prob, state = max((values[x] + trans_p[x][y] + emit, x) for x in sources)
            else:
                prob, state = max((values[x] + trans_p[x].get(y, MIN_INF) + emit, x) for x in prev)
            new_values[y] = prob
            path[y] = state
        values = new_values
        paths.append(path)
    _, state = max((values[y], y) for y in paths[-1])
    route = [None] * len(obs)
    for i in range(len(obs) - 1, -1, -1):
        route[i] = state
        state = paths[i][state]
    return route


def _match_zh(rule: PosRule, text: str, start: int, end: int, cache: dict) -> Iterator[tuple[int, int]]:
    """jieba.posseg tags a text block by block (its own `re_han_internal.split`), and inside a Han block
    piece by piece along the dictionary route (words, and runs of single characters that its HMM tags,
    the costly part). A rule whose first token is a word list can only match from a piece containing one
    of the words, and takes at most len(tokens)-1 more tokens: only those pieces are tagged (and the
    tokens after them only when one of the piece's tokens is a first-token word), the rest is skipped
    (a gap no match crosses). The tokens, and so the matches, are exactly those of tagging
    the whole sentence."""
    specs = rule.tokens
    first = specs[0]
    sentence = text[start:end]
    posseg = jieba_posseg()
    if not first.words or first.optional:
        tokens = tagged_tokens(posseg.cut(sentence, HMM=True), start)
        yield from scan_tokens(specs, tokens)
        return
    holds_word = _word_finder(tuple(first.words))
    first_words = set(first.words)
    tail = len(specs) - 1  # tokens a match may take after its first one
    by_route = cache.get("route_ok")
    if by_route is None:
        by_route = cache["route_ok"] = jieba_route_ok()
    region: list[tuple[int, int, str, str]] = []
    pending = -1  # tokens still wanted after the last piece where a match can start; <= 0: none
    offset = start
    for block in posseg.re_han_internal.split(sentence):
        if not block:
            continue
        anchored = holds_word(block) is not None
        if not anchored and pending <= 0:
            if region:
                yield from scan_tokens(specs, region)
                region = []
            offset += len(block)
            continue
        if by_route and posseg.re_han_internal.match(block):
            pieces = _han_segments(block, cache)
        else:
            pieces = [(block, None)]
        for piece, is_word in pieces:
            candidate = anchored and holds_word(piece) is not None
            if candidate or pending > 0:
                tagged = _tag_block(piece, cache) if is_word is None else _tag_segment(piece, is_word, cache)
                for word, flag in tagged:
                    region.append((offset, offset + len(word), word, flag))
                    offset += len(word)
                    pending -= 1
                if candidate and any(word in first_words for word, _ in tagged):
                    pending = tail  # a match may start here (not in 进行, which only holds 行)
            else:
                if region:
                    yield from scan_tokens(specs, region)
                    region = []
                offset += len(piece)
    if region:
        yield from scan_tokens(specs, region)


@lru_cache(maxsize=64)
def _word_finder(words: tuple[str, ...]):
    """`search(s)` that finds one of `words` in s (not None) exactly when `any(w in s for w in words)`."""
    return re.compile("|".join(re.escape(w) for w in words)).search


def tagged_tokens(pairs, offset: int) -> list[tuple[int, int, str, str]]:
    """jieba's (word, flag) pairs as (start, end, word, flag) tokens, from `offset` on."""
    tokens: list[tuple[int, int, str, str]] = []  # (start, end, word, flag)
    for pair in pairs:
        word, flag = pair.word, pair.flag
        tokens.append((offset, offset + len(word), word, flag))
        offset += len(word)
    return tokens


def scan_tokens(specs: list[PosToken], tokens: list[tuple[int, int, str, str]]) -> Iterator[tuple[int, int]]:
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


_NONSPACE = re.compile(r"\S+")  # what spaCy's tokenizer splits on first: str.isspace() runs


def _match_en(rule: PosRule, text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """spaCy tokenizes each whitespace-separated piece on its own; a rule whose first token is a
    word list can only match from a piece containing one of the words, and takes at most
    len(tokens)-1 more tokens (so at most that many more pieces). Only those windows are
    tokenized and matched; the matches are exactly those over the whole sentence."""
    sentence = text[start:end]
    finder = _first_word_finder(rule)
    if finder is None:
        yield from leftmost(en_spans(rule, sentence, 0), start)
        return
    found: list[tuple[int, int]] = []
    for ra, rb in _windows(sentence, finder, len(rule.tokens) - 1):
        found.extend(en_spans(rule, sentence[ra:rb], ra))
    found.sort()
    yield from leftmost(found, start)


_SPACE = re.compile(r"\s")
_SEPARATOR = "\n\n"  # between windows in one spaCy pass: a whitespace token of its own


def _match_en_each(rule: PosRule, text: str, sentences: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """_match_en over each sentence, the windows of all of them tokenized and matched in one spaCy call
    (a call costs some 7 us beyond its text). spaCy tokenizes each whitespace-separated piece on its own,
    so a window's tokens are the same there, and no match crosses the separator's whitespace token
    when every token of the rule needs a word or a shape (alpha, capitalized, digit) it does not have."""
    finder = _first_word_finder(rule)
    if finder is None or not all(spec.shape in ("alpha", "capitalized", "digit") or
                                 (spec.words and not any(w.isspace() for w in spec.words)) for spec in rule.tokens):
        return [list(_match_en(rule, text, a, b)) for a, b in sentences]
    owners, starts, pieces, bases, base = [], [], [], [], 0  # per window: sentence, offset in text, text, in joined
    for k, (a, b) in enumerate(sentences):
        sentence = text[a:b]
        for ra, rb in _windows(sentence, finder, len(rule.tokens) - 1):
            owners.append(k)
            starts.append(a + ra)
            pieces.append(sentence[ra:rb])
            bases.append(base)
            base += rb - ra + len(_SEPARATOR)
    found: list[list[tuple[int, int]]] = [[] for _ in sentences]
    first = 0
    while first < len(pieces):  # in calls of at most SPACY_CHUNK_CHARS (a window longer than that alone)
        last = first + 1
        while last < len(pieces) and bases[last] + len(pieces[last]) - bases[first] <= SPACY_CHUNK_CHARS:
            last += 1
        doc = _make_doc(_SEPARATOR.join(pieces[first:last]))
        for _, s, e in _en_matcher(rule)(doc):
            tail = doc[e - 1]
            a, b = bases[first] + doc[s].idx, bases[first] + tail.idx + len(tail.text)
            w = bisect_right(bases, a) - 1
            found[owners[w]].append((starts[w] + a - bases[w], starts[w] + b - bases[w]))
        first = last
    for spans in found:
        spans.sort()
        spans[:] = leftmost(spans, 0)
    return found


def _windows(sentence: str, finder: tuple, tail: int) -> list[tuple[int, int]]:
    """Disjoint character ranges, each from the start of a piece holding a candidate first word
    to the end of the `tail`-th piece after the last candidate piece in it."""
    regions: list[tuple[int, int]] = []
    r_start = r_end = -1
    lowered = sentence.lower()
    if len(lowered) == len(sentence):  # then every character lowered to one: offsets agree
        hits = finder[1](lowered)
    else:
        hits = [m.start() for m in finder[0].finditer(sentence)]
    for p in hits:
        if p >= r_end:  # a piece after the current window: open a new one at its start
            if r_end >= 0:
                regions.append((r_start, r_end))
            r_start = p
            while r_start > 0 and not sentence[r_start - 1].isspace():
                r_start -= 1
        space = _SPACE.search(sentence, p)
        end = space.start() if space else len(sentence)
        for _ in range(tail):
            nxt = _NONSPACE.search(sentence, end)
            if nxt is None:
                break
            end = nxt.end()
        r_end = max(r_end, end)
    if r_end >= 0:
        regions.append((r_start, r_end))
    return regions


_EN_FINDERS: dict[int, tuple[PosRule, tuple | None]] = {}


def _first_word_finder(rule: PosRule) -> tuple | None:
    """Searches for the first token's words (case-insensitive in the original; in lowered text, the
    sorted starts of every occurrence, by Aho-Corasick, some 2x faster than the alternation there: a
    start inside an earlier occurrence, which finditer skips, lies in the same whitespace-free piece,
    so the windows do not change): they find every place where a token whose lower case is one of
    them can start (a superset). None: no such shortcut for this rule."""
    hit = _EN_FINDERS.get(id(rule))
    if hit is not None and hit[0] is rule:
        return hit[1]
    first = rule.tokens[0]
    words = first.words or []
    usable = bool(words) and not first.optional and all(w.isascii() and w and not any(
        ch.isspace() for ch in w) for w in words)
    finder = None
    if usable:
        import ahocorasick

        alternation = "|".join(re.escape(w.lower()) for w in sorted(set(words), key=len, reverse=True))
        automaton = ahocorasick.Automaton()
        for w in {w.lower() for w in words}:
            automaton.add_word(w, len(w))
        automaton.make_automaton()

        def starts(lowered: str) -> list[int]:
            return sorted({end - length + 1 for end, length in automaton.iter(lowered)})

        finder = (re.compile(alternation, re.IGNORECASE), starts)
    _EN_FINDERS[id(rule)] = (rule, finder)
    return finder


SPACY_CHUNK_CHARS = 100_000  # text per spaCy call: bounded memory (spaCy refuses over nlp.max_length, 1,000,000)


def _make_doc(text: str):
    """spaCy's tokens of `text`, any length: the tokenizer alone, without `make_doc`'s nlp.max_length
    check, which guards the parser's and NER's memory (neither runs here). Callers split the text they
    can (windows, sentences) into calls of at most SPACY_CHUNK_CHARS."""
    return _spacy_en().tokenizer(text)


def en_spans(rule: PosRule, sentence: str, offset: int) -> list[tuple[int, int]]:
    """Every span the rule's spaCy Matcher finds in `sentence`, shifted by `offset` (overlaps kept)."""
    doc = _make_doc(sentence)
    out = []
    for _, s, e in _en_matcher(rule)(doc):
        tail = doc[e - 1]
        out.append((offset + doc[s].idx, offset + tail.idx + len(tail.text)))
    out.sort()
    return out


def leftmost(spans: list[tuple[int, int]], start: int) -> Iterator[tuple[int, int]]:
    """The leftmost, non-overlapping spans, shifted by `start`."""
    last = -1
    for a, b in spans:  # leftmost, non-overlapping
        if a >= last:
            yield start + a, start + b
            last = b
