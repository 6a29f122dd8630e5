"""segment/clauses.py: clause units, cut at every clause mark (zh and en) and inline enumeration."""

from __future__ import annotations

from catp.document import Analysis, UnitKind
from catp.segment import segment
from catp.segment.clauses import clause_units, cuts


def pieces(text: str) -> list[str]:
    return [text[a:b] for a, b in cuts(text, 0, len(text))]


def test_an_english_fee_clause_comes_apart_from_its_sentence():
    text = ("5.1 Upfront Licence Fee. The Licensee shall pay a fee of US$1,250,000, payable in two instalments: "
            "(a) US$750,000 within thirty (30) days; and (b) US$500,000 on delivery.")
    got = pieces(text)
    assert "The Licensee shall pay a fee of US$1,250,000," in got[0]  # a thousands comma does not cut
    assert "payable in two instalments:" in got
    assert any(p.startswith("(a) US$750,000") for p in got) and any(p.startswith("(b) US$500,000") for p in got)
    assert "".join(text.split()) == "".join("".join(got).split())  # every character kept, in order


def test_names_and_dates_stay_whole():
    assert pieces("Signed on May 26, 2019 by Acme, Inc. and Beta, LLC today.") == [
        "Signed on May 26, 2019 by Acme, Inc. and Beta, LLC today."]


def test_chinese_clause_marks_and_enumerations_cut():
    text = "甲方应于签订后十日内支付首期款人民币500万元，乙方收到后开具发票；逾期的，按日万分之五支付违约金（一）货款（二）运费"
    assert pieces(text) == ["甲方应于签订后十日内支付首期款人民币500万元，", "乙方收到后开具发票；", "逾期的，",
                            "按日万分之五支付违约金", "（一）货款", "（二）运费"]


def test_short_pieces_join_a_neighbour():
    assert pieces("是，否。") == ["是，否。"]  # no piece under clause_unit_min_chars on its own


def test_clause_units_keep_a_partition_with_sentence_indexes():
    text = "第五条 费用\n许可费为人民币100万元，分两期支付：首期60万元，二期40万元。\n| a | b |\n"
    doc = clause_units(segment(Analysis(text=text, lang="zh")))
    assert [u.index for u in doc.units] == list(range(len(doc.units)))
    assert doc.units[0].kind is UnitKind.HEADING and doc.units[-1].kind is UnitKind.TABLE_ROW  # left whole
    body = [u for u in doc.units if u.kind in (UnitKind.SENTENCE, UnitKind.CLAUSE)]
    assert [text[u.start : u.end] for u in body] == ["许可费为人民币100万元，", "分两期支付：", "首期60万元，", "二期40万元。"]
    assert body[0].kind is UnitKind.SENTENCE and len({u.sentence for u in body}) == 1
    assert all(a.end <= b.start for a, b in zip(doc.units, doc.units[1:]))
