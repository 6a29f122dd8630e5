"""Aligning a token-level compressor's output back to input offsets (evals/align.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.align import align_output, fit
from evals.methods import Budget
from evals.sizing import CharSize


def test_words_are_aligned_back_to_input_offsets():
    original = "The fee is  $5,000 per year, payable monthly."
    spans = align_output(original, "fee $5,000 monthly.")
    assert [original[s:e] for s, e in spans] == ["fee", "$5,000", "monthly."]
    assert align_output(original, "xyz qqq") == []


def test_output_without_spaces_is_aligned_piece_by_piece():
    """Chinese has no spaces: a compressed clause is one 'word' that is not in the input whole, since tokens
    inside it were dropped. Its pieces are found in order; a lone character far ahead is not taken."""
    original = "甲方应于2024年3月1日前支付服务费人民币伍万元整，逾期按日万分之五支付违约金。"
    compressed = "甲方2024年3月1日前支付服务费伍万元，逾期支付违约金"
    pieces = [original[s:e] for s, e in align_output(original, compressed)]
    assert pieces == ["甲方", "2024年3月1日前支付服务费", "伍万元", "，逾期", "支付违约金"]
    assert "".join(pieces) == compressed
    assert align_output("甲乙丙丁戊己庚辛壬癸子丑寅卯", "甲卯") == [(0, 1)]  # 卯 is 13 characters on


def test_a_fragment_that_also_occurs_far_ahead_does_not_skip_the_text_between():
    """LLMLingua cut "EN100466" to "EN1046", which is also the start of "EN104655" much further on. Taken
    there, it would move the match past every kept word before it."""
    filler = "".join(f"Patient {n} was seen on day {n} with a mild fever and cough. " for n in range(200))
    original = ("=== EN100466 (The Pan African Medical Journal) ===\nA 34-year-old woman was referred with "
                "severe epistaxis after two weeks of bleeding.\n" + filler + "=== EN104655 (BMC) ===\nEnd.")
    compressed = "=== EN1046 (The Pan African Journal) ===\n 34-year-old woman referred severe epistaxis two weeks"
    spans = align_output(original, compressed)
    assert spans[-1][1] < original.index("Patient 0")
    kept = " ".join(original[s:e] for s, e in spans)
    for word in ["34-year-old", "woman", "referred", "severe epistaxis", "two weeks"]:
        assert word in kept


def test_an_anchor_out_of_order_is_dropped():
    """A long piece found once, but behind the others, is not taken: the chain in order wins."""
    original = "alpha-unique-head. " + "beta gamma delta epsilon zeta eta theta iota kappa lambda. " * 3 + "omega-unique-tail."
    compressed = "omega-unique-tail alpha-unique-head beta gamma delta"
    spans = align_output(original, compressed)
    assert spans == sorted(spans)
    assert original.index("omega") > spans[-1][0]
    assert original[spans[0][0]:spans[0][1]].startswith("alpha-unique-head")


def _pieces(text: str, keep: list[bool]) -> str:
    """Text with some of its whitespace-separated words, and halves of words, dropped."""
    out = []
    for n, word in enumerate(text.split()):
        flag = keep[n % len(keep)]
        out.append(word if flag else word[: len(word) // 2])
    return " ".join(out)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["fee", "royalty", "5%", "2024年", "甲方", "支付", "cap", "$1,000", "the", "of"]),
                min_size=1, max_size=80),
       st.lists(st.booleans(), min_size=1, max_size=7))
def test_spans_are_ordered_in_bounds_and_hold_only_output_text(words, keep):
    original = " ".join(words)
    compressed = _pieces(original, keep)
    spans = align_output(original, compressed)
    assert all(0 <= s < e <= len(original) for s, e in spans)
    assert all(e1 <= s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))
    matched = iter("".join(compressed.split()))
    assert all(ch in matched for s, e in spans for ch in original[s:e] if not ch.isspace())


def test_fit_cuts_the_output_to_the_budget_and_fills_it():
    """Too long an output is cut at the end, inside its last span if need be: between words, or after any
    CJK character; as far as the budget allows, and no further."""
    english = "The royalty is five percent of net sales, paid each quarter in arrears."
    chinese = "甲方应于二零二四年三月一日前支付服务费人民币伍万元整，逾期按日支付违约金。"
    for text, spans, next_piece in [(english, [(0, len(english))], lambda rest: rest.split()[0]),
                                    (chinese, [(0, 10), (12, len(chinese))], lambda rest: rest[0])]:
        size = CharSize(text)
        for limit in range(3, 30):
            out = fit(text, spans, Budget("chars", limit), size)
            assert 0 < size.of(out.text) <= limit
            rest = text[out.kept[-1][1]:].lstrip()
            assert size.of(out.text + next_piece(rest)) > limit
