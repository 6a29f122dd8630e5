"""Properties of prune() over random mixed zh/en documents (hypothesis).

Documents are built from realistic zh/en fragments (contract, judgment, medical, finance wording with
numbers, dates, amounts, negations, headings, table rows, boilerplate) mixed with random Unicode,
numbers and newlines; budgets are random. For every one: the output is an ordered extract of the input
(kept spans sorted and disjoint, output == gap_marker.join(pieces)), it never exceeds the budget in
the real Qwen tokenizer, the same input gives the same output, pruning the output again under the same
budget leaves it unchanged, and the offsets survive bytes and JSON round trips.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catp.errors import InputError
from catp.pipeline import Pruner
from catp.result import PruneResult

FRAGMENTS = [
    "第五条 违约责任", "第十二章 附则", "【病史特点】", "一、总则", "诊疗经过：", "ARTICLE 7 TERMINATION",
    "1. RIGHTS GRANTED", "Section 4.2 Payment Terms",
    "甲方应于2024年3月5日前向乙方支付违约金三百万元。", "但是，如果乙方未按期交付，甲方有权解除本合同。",
    "根据相关规定，经双方协商一致，签订本协议。", "本合同一式两份，双方各执一份，具有同等法律效力。",
    "患者否认高血压病史，未见明显异常。", "阿莫西林0.5g 每日3次，体温38.3℃，心率88次/分。",
    "本公司2024年营业收入同比增长百分之五，净利润为1.2亿元。", "原告曹0与被告张x1原系夫妻关系，××××年××月份结婚。",
    "北京星河科技有限公司（以下简称“甲方”）", "乙方不得转让本合同项下的任何权利，",
    "The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.",
    "However, the Company shall not be liable for any indirect damages unless otherwise agreed.",
    "This Agreement shall be governed by the laws of the State of New York.",
    "Revenue increased 12% year over year to USD 3.4 billion in Q3 2024.",
    "The patient denies chest pain. No evidence of fever. Aspirin 100 mg daily.",
    "IN WITNESS WHEREOF, the parties have executed this Agreement as of July 11, 2006.",
    "For the avoidance of doubt, including but not limited to the Territory,",
    "Mr. Smith of the U.S. office signed on Jan. 5, 2024.", "EuroMedia Holdings Corp. (\"Licensor\")",
    "项目 | 2024年 | 2023年 | 同比", "营业收入 | 1,234.5 | 1,100.2 | 12.2%", "Revenue\t$3.4bn\t$3.1bn\t+9%",
    "- first item, with a clause; and more", "（二）甲方负责安装调试", "2、乙方负责验收。",
    "What is the governing law? 本合同适用中华人民共和国法律。",
]
SEPARATORS = ["", " ", "\n", "\n\n", "\r\n", "\t", "。", ". ", "，", "; ", " | "]

fragment = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.sampled_from(FRAGMENTS),  # weighted: mostly realistic text
    st.text(min_size=1, max_size=30),  # any Unicode (no surrogates: hypothesis leaves them out)
    st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=40),
    st.builds(lambda n: f"{n:,}", st.integers(-10**9, 10**12)),
    st.builds(lambda x: f"{x:.2f}%", st.floats(-1e4, 1e4, allow_nan=False)),
    st.builds(lambda y, m, d: f"{y}年{m}月{d}日", st.integers(1990, 2030), st.integers(1, 12), st.integers(1, 28)),
)
documents = st.lists(st.tuples(fragment, st.sampled_from(SEPARATORS)), min_size=1, max_size=40).map(
    lambda parts: "".join(f + s for f, s in parts)).filter(lambda t: t.strip())

PRUNER = Pruner()
TOKENS = PRUNER.tokens


def check_extract(result: PruneResult, text: str) -> None:
    spans = result.kept
    for a, b in zip(spans, spans[1:]):
        assert a.end < b.start, "kept spans must be sorted and disjoint"
    pieces = [text[s.start : s.end] for s in spans]
    assert all(0 <= s.start < s.end <= len(text) for s in spans)
    assert all(piece.strip() for piece in pieces)
    assert result.text == result.gap_marker.join(pieces)
    position = 0
    for piece in pieces:  # each piece appears in the output, in order
        found = result.text.find(piece, position)
        assert found >= 0
        position = found + len(piece)


def comparable(result: PruneResult) -> dict:
    return result.model_dump(exclude={"stats": {"elapsed_s", "encoding"}})


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents, budget=st.integers(0, 400))
def test_prune_invariants(text, budget):
    result = PRUNER.prune(text, budget=budget)
    check_extract(result, text)

    # never over budget, counted in the real tokenizer, gap markers included
    assert TOKENS.count(result.text) == result.stats.output_tokens <= budget

    # deterministic
    assert comparable(PRUNER.prune(text, budget=budget)) == comparable(result)

    # a fixed point: the output already fits, so pruning it again changes nothing
    if result.text.strip():
        assert PRUNER.prune(result.text, budget=budget).text == result.text

    # offsets survive the bytes path and a JSON round trip
    try:
        via_bytes = PRUNER.prune_bytes(text.encode("utf-8"), budget=budget)
    except InputError as exc:  # by design, bytes that are over 1% NUL are refused as binary
        assert text.count("\x00") > len(text) // 100 and "binary" in str(exc)
    else:
        assert [(s.start, s.end) for s in via_bytes.kept] == [(s.start, s.end) for s in result.kept]
        assert via_bytes.text == result.text
    assert PruneResult.model_validate_json(result.model_dump_json()) == result

    # protected spans reported dropped are really outside every kept span
    for d in result.dropped_protected:
        assert text[d.start : d.end] == d.text
        assert not any(s.start <= d.start and d.end <= s.end for s in result.kept)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents, numerator=st.integers(1, 12), denominator=st.integers(1, 12))
def test_ratio_invariants(text, numerator, denominator):
    if numerator > denominator:
        numerator, denominator = denominator, numerator
    result = PRUNER.prune(text, ratio=f"{numerator}/{denominator}")
    check_extract(result, text)
    n = TOKENS.count(text)
    assert result.stats.input_tokens == n
    assert result.stats.budget == int(numerator / denominator * n)
    assert result.stats.output_tokens <= result.stats.budget
    if numerator == denominator:
        assert result.text == text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents, budget=st.integers(0, 200), question=st.sampled_from(
    ["违约金是多少？", "What is the fee?", "When does the agreement terminate?", "患者的体温是多少", "x"]))
def test_question_mode_invariants(text, budget, question):
    result = PRUNER.prune(text, budget=budget, question=question)
    check_extract(result, text)
    assert result.stats.output_tokens <= budget
