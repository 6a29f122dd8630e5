"""The speed-ups are exact: each fast path gives what the plain path gives.

- token_starts in chunks, and from the token ids, == the offsets of one encode of the whole text;
- zh POS rules: tagging only the jieba route pieces that can hold a match == tagging the sentence,
  and the route itself (one pass) == jieba's get_DAG + calc;
- en POS rules: tokenizing only the windows that can hold a match == tokenizing the sentence;
- the lexical term index (bigrams by map, document frequencies in one Counter) == the plain loops;
- loading spaCy for the en POS rules does not import torch.
(No timing here: speed is measured in benchmarks/.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _samples import real_texts
from hypothesis import given, settings
from hypothesis import strategies as st

from catp.document import Analysis
from catp.rules import pos
from catp.rules.catalog import resolve
from catp.rules.schema import PosToken
from catp.scoring.lexical import STOP_WORDS, TERMS, index_terms, unit_terms
from catp.segment import segment
from catp.tokens import safe_chunks, load_token_counter

ROOT = Path(__file__).resolve().parents[2]
TRICKY = [
    "a\n\nb\n\n\nc\n \nd \n e\r\nf" * 40,
    "word " * 3000,  # one long line: cuts before spaces
    "词" * 5000 + "\n" + "字" * 5000,  # runs with no safe cut at all
    "x  y   z\t\tq \u3000w\u00a0v " * 400,
    "Price: $1,234.56 (USD)\n\n\n  - item\n\t- item\n" * 200,
    "<|endoftext|>\n<|im_start|>user\nhi<|im_end|>\n" * 100,
    "龘靐齉𠀀 😀😀 é ñ x" * 300,  # characters split over several byte-level tokens
    "cafe\u0301 e\u0301te\u0301 Ω\u2126 \uf900 " * 300,  # not NFC: the offsets path
    "plain ascii words and more words\n" * 300,
]


@pytest.fixture(scope="module")
def qwen():
    return load_token_counter()


def one_encode(counter, text: str) -> list[int]:
    return [s for s, _ in counter.tokenizer.encode(text, add_special_tokens=False).offsets]


@pytest.mark.parametrize("chunk", [7, 64, 1000])
@pytest.mark.parametrize("text", TRICKY)
def test_chunked_token_starts_equal_one_encode(qwen, text, chunk):
    assert qwen.token_starts(text, chunk_chars=chunk) == one_encode(qwen, text)


def test_token_starts_from_ids_are_used_for_nfc_text(qwen, monkeypatch):
    text = real_texts("cail2019_cjrc", 1, 20_000)[0] + TRICKY[6]

    def no_offsets(*args, **kwargs):
        raise AssertionError("offsets asked for")

    monkeypatch.setattr(qwen.tokenizer, "encode_batch", no_offsets, raising=False)
    assert qwen.token_starts(text, chunk_chars=3_000) == one_encode(qwen, text)


def test_chunked_token_starts_on_real_documents(qwen):
    for name in ("cuad", "cail2019_cjrc", "ccks2017_cner", "tatqa"):
        for text in real_texts(name, 2, 60_000):
            assert qwen.token_starts(text, chunk_chars=3_000) == one_encode(qwen, text), name


class _BatchSpy:
    """A tokenizer that records how many chunks each encode_batch_fast call gets."""

    def __init__(self, tok):
        self.tok, self.batches = tok, []

    def __getattr__(self, name):
        return getattr(self.tok, name)

    def encode_batch_fast(self, chunks, **kwargs):
        self.batches.append(len(chunks))
        return self.tok.encode_batch_fast(chunks, **kwargs)


def test_default_chunks_of_a_long_text_equal_one_encode(qwen, monkeypatch):
    text = "\n".join(real_texts("cuad", 6, 60_000))
    assert len(text) > 100_000  # several chunks
    spy = _BatchSpy(qwen.tokenizer)
    monkeypatch.setattr(qwen, "tokenizer", spy)
    assert qwen.token_starts(text) == one_encode(qwen, text)
    assert spy.batches[0] >= 2


def test_chunks_are_encoded_a_few_at_a_time(qwen, monkeypatch):
    """Each encoding's memory is dropped before the next batch (16 chunks, or two per core) is encoded."""
    import os

    text = "\n".join(real_texts("cail2019_cjrc", 4, 60_000))
    spy = _BatchSpy(qwen.tokenizer)
    monkeypatch.setattr(qwen, "tokenizer", spy)
    assert qwen.token_starts(text, chunk_chars=500) == one_encode(qwen, text)
    batch = max(16, 2 * (os.cpu_count() or 1))
    assert sum(spy.batches) == len(safe_chunks(text, 500)) > batch
    assert max(spy.batches) == batch


def test_safe_chunks_tile_the_text():
    text = TRICKY[0] + TRICKY[1] + TRICKY[2]
    pieces = safe_chunks(text, 100)
    assert pieces[0][0] == 0 and pieces[-1][1] == len(text)
    assert all(a < b for a, b in pieces) and all(p[1] == q[0] for p, q in zip(pieces, pieces[1:]))


def test_other_tokenizers_are_encoded_whole():
    from tokenizers import Tokenizer, models, pre_tokenizers

    from catp.tokens import TokenCounter

    tok = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    counter = TokenCounter(tok, "word-level")
    assert not counter.chunkable()
    assert counter.token_starts("a b " * 30_000, chunk_chars=100) == one_encode(counter, "a b " * 30_000)


def _rules(lang: str):
    return [r for d in ("legal", "finance", "medical") for item in resolve(d) for r in item.ruleset.rules
            if r.kind == "pos" and lang in r.lang]


def _windows(texts, size):
    for text in texts:
        for a in range(0, len(text), size):
            yield text, a, min(len(text), a + size)


def test_zh_pos_pieces_match_like_whole_sentences():
    texts = real_texts("cail2019_cjrc", 3, 20_000) + real_texts("ccks2017_cner", 3, 20_000)
    texts += [(ROOT / "examples" / "contract_zh.txt").read_text(encoding="utf-8")]
    texts += ["".join(ch for ch in texts[0] if "\u4e00" <= ch <= "\u9fff")]  # no punctuation at all
    rules = {r.id: r for r in _rules("zh")}.values()
    assert rules
    posseg = pos.jieba_posseg()
    found = 0
    for rule in rules:
        for text, a, b in _windows(texts, 700):
            plain = list(pos.scan_tokens(rule.tokens, pos.tagged_tokens(posseg.cut(text[a:b], HMM=True), a)))
            assert list(pos.match(rule, text, a, b, "zh", {})) == plain, (rule.id, a)
            found += len(plain)
    assert found > 50


def jieba_route_ends(block: str) -> list[int]:
    tokenizer = pos.jieba_posseg().dt.tokenizer
    route: dict = {}
    tokenizer.calc(block, tokenizer.get_DAG(block), route)
    return [route[x][1] for x in range(len(block))]


def test_zh_route_ends_equal_jiebas_dag_and_calc():
    assert pos.jieba_route_ok()
    posseg = pos.jieba_posseg()
    texts = real_texts("cail2019_cjrc", 3, 20_000) + real_texts("ccks2017_cner", 3, 20_000)
    blocks = [b for t in texts for b in posseg.re_han_internal.split(t) if b and posseg.re_han_internal.match(b)]
    blocks += ["龘靐齉", "一二三四五六七八九十" * 3, "abc123", "中华人民共和国最高人民法院", "行行行行"]
    assert len(blocks) > 1000
    word_logp: dict = {}  # shared by all blocks, as one document's cache shares it
    for block in blocks:
        assert pos.route_ends(block) == jieba_route_ends(block) == pos.route_ends(block, word_logp), block


def test_en_pos_windows_match_like_whole_sentences():
    texts = real_texts("cuad", 3, 20_000) + real_texts("tatqa", 2, 20_000)
    texts += [(ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8"),
              "PAY  the  Fee; pay\tTHE fee, Pays  its dues; repay the loan; PAYS" * 20]
    rules = {r.id: r for r in _rules("en")}.values()
    assert rules
    found = 0
    for rule in rules:
        for text, a, b in _windows(texts, 500):
            plain = list(pos.leftmost(pos.en_spans(rule, text[a:b], 0), a))
            assert list(pos.match(rule, text, a, b, "en", {})) == plain, (rule.id, a)
            found += len(plain)
    assert found > 20


def test_en_pos_sentences_matched_in_one_spacy_pass_match_like_each_alone():
    texts = real_texts("cuad", 3, 20_000) + real_texts("tatqa", 2, 20_000)
    texts += ["PAY  the  Fee; pay\tTHE fee, Pays  its dues; repay the loan; PAYS" * 20]
    found = 0
    for rule in {r.id: r for r in _rules("en")}.values():
        # with a token that takes any word, one pass could match across windows: each alone then
        anything = rule.model_copy(update={"tokens": [rule.tokens[0], PosToken(), *rule.tokens[1:]]})
        for variant in (rule, anything):
            for text in texts:  # sentences of 300 characters, and the gaps between them skipped
                sentences = [(a, min(len(text), a + 300)) for a in range(0, len(text), 400)]
                each = [list(pos.match(variant, text, a, b, "en", {})) for a, b in sentences]
                assert pos.match_each(variant, text, sentences, "en") == each, rule.id
                found += sum(map(len, each))
            lines = "The parties agree to pay\nthe sums below and to deliver\ngoods on time"  # each ends on a verb
            sentences = [(0, 24), (25, 54), (55, len(lines))]
            assert pos.match_each(variant, lines, sentences, "en") == [
                list(pos.match(variant, lines, a, b, "en", {})) for a, b in sentences], rule.id
    assert found > 20


def test_spacy_for_en_rules_does_not_load_torch():
    code = ("import sys; from catp.rules import pos; pos._spacy_en(); assert 'torch' not in sys.modules; "
            "import importlib.util; assert importlib.util.find_spec('torch') is None or __import__('torch')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()


def _plain_unit_terms(text: str) -> list[str]:
    terms: list[str] = []
    for tok in TERMS.findall(text.lower()):
        if tok[0] >= "\u3400":
            terms.extend([tok] if len(tok) == 1 else [tok[i : i + 2] for i in range(len(tok) - 1)])
        elif tok not in STOP_WORDS:
            terms.append(tok)
    return terms


def test_lexical_term_index_equals_plain_loops():
    import math
    from collections import Counter

    for name in ("cuad", "cail2019_cjrc", "ccks2017_cner"):
        for text in [*real_texts(name, 2, 60_000), *TRICKY]:
            doc = Analysis(text=text)
            segment(doc)
            index_terms(doc)
            pieces = [text[u.start : u.end] for u in doc.units]
            assert doc.columns.terms == [_plain_unit_terms(p) for p in pieces] == [unit_terms(p) for p in pieces]
            assert doc.columns.term_sets == [frozenset(ts) for ts in doc.columns.terms]
            df: Counter[str] = Counter()
            for ts in doc.columns.term_sets:
                df.update(ts)
            n = max(len(doc.units), 1)
            weights = {t: math.log(1 + n / c) for t, c in df.items()}
            assert doc.term_weight == weights and list(doc.term_weight) == list(weights), name
            # one string object per term (select's lookups find terms by identity)
            assert len({id(t) for ts in doc.columns.term_sets for t in ts}) == len(doc.term_weight), name


@pytest.mark.parametrize("text", [
    "ΟΔΥΣΣΕΥΣ and ΣΊΣΥΦΟΣ signed the ΑΣ-12 deal; 甲方支付违约金ΣΑ元, Licensee's fee-2,000.5 " * 30,
    "İstanbul İİ Straße ǅungla ΣΑΣ 合同ΣΣ x" * 30,  # İ lowers to two characters: the unit-by-unit path
])
def test_lexical_terms_from_the_lowered_text_equal_unit_by_unit(text):
    """index_terms searches the once-lowered text per unit with pos/endpos: the same terms as lowering and
    searching each unit's own text, also for units cut inside words, Han runs and next to a final sigma."""
    from itertools import pairwise

    from catp.document import Unit, UnitKind

    cuts = sorted({0, len(text), *range(3, len(text), 7), *range(5, len(text), 11)})
    doc = Analysis(text=text, units=[Unit(k, a, b, UnitKind.CLAUSE, k) for k, (a, b) in enumerate(pairwise(cuts))])
    index_terms(doc)
    assert doc.columns.terms == [_plain_unit_terms(text[u.start : u.end]) for u in doc.units]
    assert any(doc.columns.terms) and (len(text.lower()) == len(text)) == ("İ" not in text)


def _visible(text: str, start: int, end: int) -> int:
    """Non-space characters in text[start:end], counted one by one."""
    return sum(not ch.isspace() for ch in text[start:end])


def _plain_merge_short(text: str, pieces, minimum: int):
    out = []
    for a, b, ends in pieces:
        if out and _visible(text, out[-1][0], out[-1][1]) < minimum:
            out[-1] = (out[-1][0], b, ends)
        elif out and _visible(text, a, b) < minimum:
            out[-1] = (out[-1][0], b, ends or out[-1][2])
        else:
            out.append((a, b, ends))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(alphabet="ab甲 \n\u3000", max_size=6), st.booleans()), max_size=12),
       st.integers(0, 6))
def test_segment_merge_short_counts_visible_characters_once(parts, minimum):
    """merge_short adds up the visible characters of merged pieces instead of counting them again."""
    from catp.segment.splitter import default_segmenter

    text, pieces = "", []
    for part, ends in parts:  # contiguous pieces, as _split_line makes them
        pieces.append((len(text), len(text) + len(part), ends))
        text += part
    seg = default_segmenter()
    old = seg.config.min_clause_chars
    try:
        object.__setattr__(seg.config, "min_clause_chars", minimum)
        assert seg.merge_short(text, pieces) == _plain_merge_short(text, pieces, minimum)
    finally:
        object.__setattr__(seg.config, "min_clause_chars", old)


def _plain_cost_units(doc, token_starts, marker_merge):
    from bisect import bisect_left

    before, n, out = 0, len(token_starts), []
    for unit in doc.units:
        first = bisect_left(token_starts, unit.start, before)
        upto = bisect_left(token_starts, unit.end, first)
        out.append((upto - before, first - before - (first == n or token_starts[first] != unit.start),
                    marker_merge(doc.text[unit.start])))
        before = upto
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=40), st.lists(st.integers(0, 12), max_size=60),
       st.data())
def test_cost_units_search_short_stretches_like_whole_list(lengths, starts_per_char, data):
    """cost_units bisects a few token starts past the last unit's; the same costs as bisecting the whole
    list, also when more tokens start at one character than the stretch holds (zero-width tokens)."""
    from itertools import accumulate

    from catp.document import Unit, UnitKind
    from catp.cost import cost_units

    ends = list(accumulate(lengths))
    text = "ab c\n" * (ends[-1] // 5 + 1)
    cuts = sorted(set(data.draw(st.lists(st.sampled_from(ends), min_size=1))))
    gaps = data.draw(st.lists(st.integers(0, 2), min_size=len(cuts), max_size=len(cuts)))
    units, start = [], 0
    for k, (end, gap) in enumerate(zip(cuts, gaps)):
        if start + gap < end:
            units.append(Unit(len(units), start + gap, end, UnitKind.CLAUSE, k))
        start = end
    token_starts = [c for c, n in enumerate(starts_per_char[: len(text)]) for _ in range(n)]
    doc = Analysis(text=text, units=units)
    def merge(ch: str) -> int:
        return int(ch.isalpha())

    cost_units(doc, token_starts, merge)
    assert [(u.tokens, u.edge, u.marker_merge) for u in doc.units] == _plain_cost_units(doc, token_starts, merge)
