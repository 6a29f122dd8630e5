"""segment/: headings, table rows, list items, sentences and clauses, zh and en.

Limits (max_unit_chars, heading_max_chars) are read from the live config, so tuning them
does not break these tests."""

from __future__ import annotations

import pytest

from catp.document import Analysis, UnitKind
from catp.segment import segment
from catp.segment.splitter import default_segmenter

from _samples import real_en_zh

CONFIG = default_segmenter().config


def units_of(text: str) -> list[tuple[str, str]]:
    doc = segment(Analysis(text=text))
    return [(u.kind.value, text[u.start : u.end]) for u in doc.units]


def check_partition(text: str) -> None:
    """Units are sorted, disjoint, trimmed, and every non-space character is in exactly one."""
    doc = segment(Analysis(text=text))
    owner = [0] * len(text)
    previous_end, previous_sentence = 0, 0
    for i, u in enumerate(doc.units):
        assert u.index == i
        assert previous_end <= u.start < u.end <= len(text)
        assert not text[u.start].isspace() and not text[u.end - 1].isspace()
        assert u.end - u.start <= CONFIG.max_unit_chars
        assert u.sentence >= previous_sentence
        previous_end, previous_sentence = u.end, u.sentence
        for k in range(u.start, u.end):
            owner[k] += 1
    for k, ch in enumerate(text):
        assert owner[k] == 1 if not ch.isspace() else owner[k] <= 1, f"{ch!r} at {k} is in {owner[k]} units"


@pytest.mark.parametrize("line", ["第五条 违约责任", "第十二章 附则", "一、总则", "（二）甲方的义务", "【病史特点】",
                                  "诊疗经过：", "Article 5 Termination", "SECTION 12.3 Notices",
                                  "1. RIGHTS GRANTED", "2.1 DEFINITIONS", "GOVERNING LAW", "## Results"])
def test_headings(line):
    kinds = units_of(f"{line}\nThe Licensee shall pay the fee when due.\n")
    assert kinds[0] == ("heading", line)
    assert kinds[1][0] == "sentence"


def test_a_long_line_is_not_a_heading():
    line = "第五条 " + "甲方应当按照约定支付款项" * (CONFIG.heading_max_chars // 10 + 1)
    assert all(kind != "heading" for kind, _ in units_of(line))


def test_table_rows():
    text = "项目 | 2024年 | 2023年 | 同比\n营业收入 | 1,234.5 | 1,100.2 | 12.2%\nRevenue\t$3.4bn\t$3.1bn\n"
    got = units_of(text)
    assert [k for k, _ in got] == ["table_row"] * 3
    assert got[1][1] == "营业收入 | 1,234.5 | 1,100.2 | 12.2%"


def test_one_separator_is_not_a_table_row():
    assert units_of("Either A | or B decides.")[0][0] != "table_row"


@pytest.mark.parametrize("item", ["- first item here", "* starred item", "• bullet item text", "1) numbered item",
                                  "(a) lettered item", "2、乙方负责验收", "3. the third item"])
def test_list_items(item):
    assert units_of(item + "\n")[0] == ("list_item", item)


def sentences_of(text: str) -> list[list[str]]:
    """The units of each sentence, in order."""
    doc = segment(Analysis(text=text))
    out: dict[int, list[str]] = {}
    for u in doc.units:
        out.setdefault(u.sentence, []).append(text[u.start : u.end])
    return list(out.values())


def test_zh_sentences_and_clauses():
    text = "甲方应于2024年3月5日前支付货款。乙方不得转让本合同，否则应赔偿全部损失；但经甲方书面同意的除外！"
    got = sentences_of(text)
    assert got[0] == ["甲方应于2024年3月5日前支付货款。"]
    assert got[1][:3] == ["乙方不得转让本合同，", "否则应赔偿全部损失；", "但经甲方书面同意的除外！"]
    assert len(got) == 2


def test_en_sentences_and_clauses():
    text = "Either party may terminate. However, the Licensee shall pay all fees; and no refund is due."
    got = sentences_of(text)
    assert got[0] == ["Either party may terminate."]
    assert len(got) == 2 and len(got[1]) >= 2  # cut at least at the ';'
    assert any(piece.endswith("fees;") for piece in got[1])
    assert " ".join(got[1]) == text.split(". ", 1)[1]


def test_clause_kinds():
    doc = segment(Analysis(text="乙方不得转让本合同，否则应赔偿全部损失；但经甲方书面同意的除外。"))
    assert [u.kind for u in doc.units] == [UnitKind.SENTENCE, UnitKind.CLAUSE, UnitKind.CLAUSE]
    assert len({u.sentence for u in doc.units}) == 1


@pytest.mark.parametrize("text, kept_whole", [
    ("This Agreement is made by Centrack International, Inc., a Delaware company, and others.",
     "Centrack International, Inc.,"),
    ("Signed by DELTA BETA ADVISORS, LP and by the Trustee of the fund.", "DELTA BETA ADVISORS, LP"),
    ("The term begins on May 26, 2019, and ends on the fifth anniversary.", "on May 26, 2019,"),
    ("Dated as of the 5th day of March 5th, 2020, between the parties.", "March 5th, 2020,"),
])
def test_names_and_dates_are_not_cut_at_their_commas(text, kept_whole):
    assert any(kept_whole in piece for piece in sum(sentences_of(text), []))


def test_other_commas_still_end_clauses():
    assert sentences_of("The Licensee shall pay the fee, and the Licensor, in turn, shall deliver 2019 units.")[0] == [
        "The Licensee shall pay the fee,", "and the Licensor,", "in turn,", "shall deliver 2019 units."]


@pytest.mark.parametrize("text, pieces", [
    ("Mr. Smith signed the deed. It was filed.", ["Mr. Smith signed the deed.", "It was filed."]),
    ("The U.S. Government agrees. It pays.", ["The U.S. Government agrees.", "It pays."]),
    ("Payment is due by Jan. 5 every year. Late fees apply.", ["Payment is due by Jan. 5 every year.",
                                                              "Late fees apply."]),
    ("See Sec. 4 of the deed for more. Then stop.", ["See Sec. 4 of the deed for more.", "Then stop."]),
    ("Signed by J. R. Smith today. Done here.", ["Signed by J. R. Smith today.", "Done here."]),
])
def test_abbreviations_do_not_end_sentences(text, pieces):
    assert [" ".join(parts) for parts in sentences_of(text)] == pieces


def test_huge_line_without_punctuation_is_capped():
    limit = CONFIG.max_unit_chars
    for text in ("x" * (limit * 7 + 3), "word " * (limit * 2), "无标点的长句子" * limit):
        doc = segment(Analysis(text=text))
        assert len(doc.units) > 1
        assert max(u.end - u.start for u in doc.units) <= limit
        check_partition(text)


def test_capped_pieces_cut_at_spaces():
    text = "word " * (CONFIG.max_unit_chars * 2)
    doc = segment(Analysis(text=text))
    assert all(text[u.start : u.end].split(" ")[-1] == "word" for u in doc.units)


@pytest.mark.parametrize("text", [
    "第一条 总则\n\n甲方：北京星河科技有限公司\n乙方：上海云帆信息技术有限公司\n\n1. 付款，三十日内。\n",
    "ARTICLE 1\r\nThe fee is $5,000.\rLate fees apply.\n\n  - item one\n\t| a | b | c |\n",
    "   \n  leading and trailing space   \n\n",
    "a\u3000b\u00a0c\u2028d\x0ce. 句子。句子！？\"Quoted.\" (Paren.) 【标题】",
])
def test_partition_invariant(text):
    check_partition(text)


def test_partition_on_real_documents():
    for text in real_en_zh(max_chars=6000):
        check_partition(text)


def test_kinds_and_sentence_ids():
    text = "第一条 定义\n本合同所称货物，是指乙方交付的全部设备。\n| a | b | c |\n"
    doc = segment(Analysis(text=text))
    assert [u.kind for u in doc.units] == [UnitKind.HEADING, UnitKind.SENTENCE, UnitKind.CLAUSE, UnitKind.TABLE_ROW]
    assert doc.units[1].sentence == doc.units[2].sentence != doc.units[0].sentence
    assert doc.units[3].sentence > doc.units[2].sentence


def test_empty_text_has_no_units():
    assert segment(Analysis(text="")).units == []
    assert segment(Analysis(text=" \n\n\t")).units == []


def test_split_parentheses_cuts_around_a_parenthesis_only_when_asked():
    text = "Troponin was 21ng/ml (normal level under 0.01ng/ml) on admission. He had (2) lesions on the scalp."
    plain = [text[u.start : u.end] for u in segment(Analysis(text=text)).units]
    assert plain == ["Troponin was 21ng/ml (normal level under 0.01ng/ml) on admission.",
                     "He had (2) lesions on the scalp."]
    split = segment(Analysis(text=text), split_parentheses=True)
    assert [text[u.start : u.end] for u in split.units] == [
        "Troponin was 21ng/ml", "(normal level under 0.01ng/ml)", "on admission.",
        "He had (2) lesions on the scalp."]  # an enumeration's "(2)" is no aside
    assert [u.sentence for u in split.units] == [0, 0, 0, 1]


def test_medical_en_prunes_with_parentheses_split():
    from catp.pipeline import Pruner

    text = ("Liver enzymes were 5000U/L (normal level, 0-37U/L); creatine phosphokinase was 59000U/L "
            "(normal level, 10-200U/L). ") * 3
    doc = Pruner(domain="medical").analyse(text, ratio=1.0)
    assert any(text[u.start : u.end] == "(normal level," for u in doc.units)


@pytest.mark.parametrize("invisible", ["\u200b", "\u2060", "\ufeff", "\u200b\u2060"])
def test_an_invisible_character_after_a_full_stop_does_not_hide_the_sentence_end(invisible):
    """Text pasted from web pages and PDFs carries zero-width characters after full stops; the sentence
    ended there all the same (it stayed one unit, which a small budget could not take at all)."""
    text = f"The Licensee shall pay the fee.{invisible} The Licensor shall deliver the goods.{invisible} Payment is due."
    units = segment(Analysis(text=text, lang="en")).units
    assert [text[u.start : u.end] for u in units] == [
        f"The Licensee shall pay the fee.{invisible}", f"The Licensor shall deliver the goods.{invisible}",
        "Payment is due."]
