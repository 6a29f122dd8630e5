"""Baselines: exact cuts on hand-made texts, budgets respected, seeded randomness."""

from __future__ import annotations

import pytest

from evals.baselines import (HeadTruncation, LLMLingua2, MiddleOut, RandomSentences,
                             build_baselines, sentences)
from evals.methods import Budget
from evals.sizing import CharSize, TokenSize, nonws_count

TEXT = "One two. Three four five. Six seven! Eight nine ten. Eleven twelve?\nThirteen."


def run(method, budget, text=TEXT, **kw):
    size = CharSize(text)
    return method.run(text, Budget("chars", budget), size, doc_id="d1", **kw)


def test_head_truncation_keeps_the_longest_prefix_within_the_budget():
    out = run(HeadTruncation(), 10)
    assert out.text == "One two. Thr"  # 10 non-whitespace characters
    assert out.kept == [(0, 12)]
    assert nonws_count(run(HeadTruncation(), 10.9).text) == 10


def test_middle_out_splits_the_budget_between_head_and_tail():
    text = "abcdefghij" * 3  # 30 characters, no whitespace
    out = run(MiddleOut(), 10, text=text)
    assert out.kept == [(0, 5), (25, 30)]
    assert out.text == "abcde\nfghij"


def test_middle_out_with_odd_budget_gives_the_tail_the_rest():
    out = run(MiddleOut(), 7, text="0123456789")
    assert out.kept == [(0, 3), (6, 10)]


def test_sentences_cover_the_text_in_order():
    spans = sentences(TEXT)
    assert "".join(TEXT[s:e] for s, e in spans) == TEXT
    assert TEXT[spans[0][0]:spans[0][1]] == "One two."


def test_random_sentences_are_seeded_in_order_and_within_budget():
    a = run(RandomSentences(seed=1), 25)
    assert a.kept == run(RandomSentences(seed=1), 25).kept  # same seed, same choice
    assert nonws_count(a.text) <= 25
    assert a.kept == sorted(a.kept)
    whole = {TEXT[s:e].strip() for s, e in sentences(TEXT)}
    for s, e in a.kept:  # whole sentences only (merged neighbours aside)
        assert all(piece.strip() in whole for piece in _split_sentences(TEXT[s:e]))
    choices = {tuple(run(RandomSentences(seed=seed), 25).kept) for seed in range(8)}
    assert len(choices) > 1  # the seed matters


def _split_sentences(chunk):
    return [chunk[s:e] for s, e in sentences(chunk) if chunk[s:e].strip()]


def test_token_budget_is_never_exceeded_with_the_real_tokenizer():
    from catp.tokens import load_token_counter

    counter = load_token_counter()
    text = ("The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days. " * 20
            + "甲方应于2024年3月5日前向乙方支付违约金三百万元。" * 10)
    size = TokenSize(text, counter)
    for limit in (1, 17, 100, 333):
        for method in (HeadTruncation(), MiddleOut(), RandomSentences()):
            out = method.run(text, Budget("tokens", limit), size, doc_id="t")
            assert counter.count(out.text) <= limit, (method.name, limit)
        head = HeadTruncation().run(text, Budget("tokens", limit), size).text
        assert counter.count(head) >= limit - 2  # and it is not needlessly short


def test_llmlingua2_skips_with_a_reason_when_unavailable():
    reason = LLMLingua2.unavailable()
    try:
        import llmlingua  # noqa: F401
    except ImportError:
        assert reason and "llmlingua" in reason
    built, skipped = build_baselines(["head", "llmlingua2"])
    assert [b.name for b in built][0] == "head"
    assert (skipped.get("llmlingua2") == reason) if reason else ("llmlingua2" not in skipped)


def test_unknown_baseline_is_an_error():
    with pytest.raises(ValueError, match="unknown baseline"):
        build_baselines(["tail"])


def test_token_cuts_terminate_when_several_tokens_start_at_one_character():
    from catp.tokens import load_token_counter

    counter = load_token_counter()
    text = "开头。" + "𠀀𠀁😀 " * 150 + "结尾。"  # rare characters: several byte-level tokens each
    size = TokenSize(text, counter)
    assert len(set(size.starts)) < len(size.starts)  # the case under test
    for limit in (3, 40, 101):
        out = MiddleOut().run(text, Budget("tokens", limit), size)
        assert counter.count(out.text) <= limit
        assert counter.count(text[size.tail_start(limit):]) <= limit


def test_oracle_takes_the_units_richest_in_gold_within_the_budget():
    """The oracle reads the gold: of catp's units it keeps those holding the most gold per
    token, in text order, never over the budget (real Qwen tokenizer)."""
    from catp.tokens import load_token_counter
    from evals.baselines import UnitOracle
    from evals.schema import Gold

    counter = load_token_counter()
    filler = "The weather was mild and the meeting ran long. " * 6
    fact = "The Licensee shall pay $5,000 on March 1, 2024."
    text = filler + fact + " " + filler + "甲方支付违约金三百万元。"
    gold = []
    for quote in ("$5,000", "March 1, 2024", "三百万元"):
        start = text.index(quote)
        gold.append(Gold(start=start, end=start + len(quote), quote=quote, kind="amount"))
    size = TokenSize(text, counter)
    budget = Budget("tokens", counter.count(fact) + counter.count("甲方支付违约金三百万元。") + 2)
    out = UnitOracle().run(text, budget, size, gold=gold)
    assert counter.count(out.text) <= budget.limit
    assert all(q in out.text for q in ("$5,000", "March 1, 2024", "三百万元"))
    assert "weather" not in out.text
    assert out.kept == sorted(out.kept) and all(text[a:b] in out.text for a, b in out.kept)
    assert UnitOracle().run(text, budget, size, gold=[]).kept == []  # no gold: nothing is worth a token
    assert [b.name for b in build_baselines(["oracle"])[0]] == ["oracle"]
