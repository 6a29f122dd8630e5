"""Metric definitions on hand-made cases whose right answer is known."""

from __future__ import annotations

import pytest

from evals.metrics import KeptIndex, latency_summary, merge_spans, percentile, question_supported
from evals.runner import BudgetSpec, parse_budgets, parse_ratios
from evals.sizing import CharSize, nonws_prefix

TEXT = "Alpha beta. The fee is USD 1234567890 per year. Gamma delta."
GOLD = "USD 1234567890"  # 13 non-whitespace characters


def kept_index(spans, output=None, text=TEXT):
    out = output if output is not None else " … ".join(text[s:e] for s, e in spans)
    return KeptIndex(nonws_prefix(text), spans, out)


def gold_span():
    start = TEXT.index(GOLD)
    return start, start + len(GOLD)


def test_gold_kept_at_90_percent_of_its_non_whitespace_characters():
    start, end = gold_span()
    # 12 of 13 non-whitespace characters kept: 92% >= 90% -> kept
    assert kept_index([(start, end - 1)], output="x").is_kept(start, end, GOLD)
    # 11 of 13: 85% -> lost (and the output does not hold the quote)
    assert not kept_index([(start, end - 2)], output="x").is_kept(start, end, GOLD)


def test_whitespace_does_not_count_towards_the_share():
    text = "a    bcdefghij"  # 10 non-whitespace characters, 4 spaces
    index = KeptIndex(nonws_prefix(text), [(1, len(text))], "x")
    assert index.kept_chars(0, len(text)) == 9  # the spaces add nothing
    assert index.is_kept(0, len(text), text)  # 9 / 10 = 90%


def test_split_spans_add_up():
    start, end = gold_span()
    mid = start + 7
    assert kept_index([(start, mid), (mid, end)], output="x").is_kept(start, end, GOLD)
    assert kept_index([(0, 3), (start, mid)], output="x").kept_chars(start, end) == 6


def test_quote_found_in_normalised_output_counts_as_kept():
    start, end = gold_span()
    # offsets elsewhere, but the same words (with other whitespace) are in the output
    assert kept_index([(0, 5)], output="Alpha … USD\n  1234567890").is_kept(start, end, GOLD)
    assert not kept_index([(0, 5)], output="Alpha … USD 123456789").is_kept(start, end, GOLD)


def test_merge_spans_joins_touching_and_overlapping():
    assert merge_spans([(5, 8), (0, 2), (2, 4), (7, 9), (9, 9)]) == [(0, 4), (5, 9)]


def test_question_support_any_and_all():
    kept = [True, False, True]
    assert question_supported(kept, [0, 1], "any")
    assert not question_supported(kept, [0, 1], "all")
    assert question_supported(kept, [0, 2], "all")
    assert not question_supported(kept, [1], "any")


def test_nearest_rank_percentiles_and_throughput():
    values = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert percentile(values, 50) == pytest.approx(0.050)
    assert percentile(values, 95) == pytest.approx(0.095)
    assert percentile(values, 99) == pytest.approx(0.099)
    summary = latency_summary(values, input_tokens=5050)
    assert summary["max_ms"] == pytest.approx(100)
    assert summary["p50_ms"] == pytest.approx(50)
    assert summary["tokens_per_s"] == pytest.approx(5050 / sum(values))


def test_char_size_head_and_tail_cut_at_non_whitespace_counts():
    size = CharSize("ab cd\nef gh")  # 8 non-whitespace characters
    assert size.total == 8
    assert size.head_end(3) == 4  # "ab c"
    assert size.head_end(3.9) == 4
    assert size.tail_start(3) == 7  # "f gh": the smallest start leaving <= 3
    assert size.of("ab cd\nef gh"[7:]) == 3


def test_budget_specs_floor_tokens_but_not_characters():
    spec = parse_ratios("1/6")[0]
    assert spec.limit("tokens", 100) == 16
    assert spec.limit("chars", 100) == pytest.approx(100 / 6)
    assert BudgetSpec("500", absolute=500).limit("tokens", 10_000) == 500
    assert [b.label for b in parse_ratios("1/10, 1/6,0.25")] == ["1/10", "1/6", "0.25"]
    assert parse_budgets("100,2000")[1].absolute == 2000


@pytest.mark.parametrize("bad", ["1/0", "2", "0", "abc", ""])
def test_bad_ratios_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_ratios(bad)


@pytest.mark.parametrize("bad", ["-5", "1.5", "x", ""])
def test_bad_budgets_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_budgets(bad)
