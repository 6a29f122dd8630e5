"""Key sections (policy.key_sections, catp/select/coverage.py): found by heading or opening label, weighted,
covered before the greedy fills, and named in the warning when lost."""

from __future__ import annotations

import pytest

from catp import Pruner
from catp.errors import RuleError
from catp.rules.loader import load_file
from catp.rules.schema import KeySection, RuleSet, SelectionPolicy, merged_policy

FEES_EN = """MASTER SUPPLY AGREEMENT

ARTICLE 1 - DEFINITIONS

1.1 Definitions. "Products" means the goods listed in Schedule 1, as amended from time to time by the Parties.

ARTICLE 2 - SUPPLY

2.1 Forecasts. The Buyer shall deliver a forecast on 1 March 2024, 1 June 2024, 1 September 2024 and 1 December 2024, covering 12 months, 24 weeks, 36 days and 48 hours.

2.2 Orders. The Buyer shall order at least 100 units, 200 units, 300 units and 400 units in 2025, 2026, 2027 and 2028.

2.3 Delivery. Delivery shall occur within 10 days, 20 days, 30 days or 40 days of 5 May 2024, 6 June 2024 and 7 July 2024.

5.1 Upfront Fee. The Buyer shall pay a fee.

ARTICLE 9 - GOVERNING LAW

9.1 Law. This Agreement is governed by the laws of England.
"""

MEDICAL_ZH = """入院记录

主诉：右上腹痛伴发热2天。
既往史：否认高血压史，否认糖尿病史，否认冠心病史，否认肝炎史，否认结核史。
个人史：无放射性物质及毒物接触史，无吸烟史，无饮酒史。

出院诊断：
1. 急性结石性胆囊炎
2. 胆囊结石
"""


@pytest.fixture(scope="module")
def pruner() -> Pruner:
    """The built-in key sections, covered first at any budget (the rule sets' own coverage settings aside)."""
    return Pruner(rules=[_policy_file(coverage_share=0.3, coverage_min_tokens=0)])


def test_key_sections_are_found_by_heading_and_by_opening_label(pruner):
    doc = pruner.analyse(FEES_EN, ratio=1, budget=None)
    found = {(s.name, s.heading, " ".join(FEES_EN[doc.units[s.title].start : doc.units[s.title].end].split()))
             for s in doc.key_sections}
    assert ("fees", False, "5.1 Upfront Fee.") in found  # a numbered paragraph's label, no heading
    assert ("governing_law", True, "ARTICLE 9 - GOVERNING LAW") in found
    assert not any(name == "fees" and title.startswith("2.") for name, _, title in found)
    zh = pruner.analyse(MEDICAL_ZH, ratio=1)
    names = [(s.name, s.heading) for s in zh.key_sections]
    assert ("complaint", False) in names and ("diagnosis", True) in names
    diagnosis = next(s for s in zh.key_sections if s.name == "diagnosis")
    assert "胆囊结石" in MEDICAL_ZH[zh.units[diagnosis.first].start : zh.units[diagnosis.end - 1].end]


def test_a_key_section_is_covered_before_denser_filler(pruner):
    # The fee paragraph holds fewer facts per token than the dated forecast and order lines; value per token
    # alone leaves it out. Coverage keeps its label first.
    off = Pruner(rules=[_policy_file(coverage_share=0.0, coverage_min_tokens=0)])
    for budget in (28, 44):  # of 273 tokens
        kept = pruner.prune(FEES_EN, budget=budget).text
        assert "5.1 Upfront Fee." in kept  # its title first, then its best unit where the share allows
        assert "governed by the laws of England" in kept
        assert "Upfront Fee" not in off.prune(FEES_EN, budget=budget).text


def test_the_warning_names_the_key_sections_lost(pruner):
    result = pruner.prune(FEES_EN, budget=12)
    (warning,) = [w for w in result.warnings if "forced out" in w]
    assert "key sections with nothing kept: " in warning
    assert "fees ('5.1 Upfront Fee.')" in warning
    assert "dropped_protected lists each" in warning
    assert len(result.dropped_protected) > 5  # the full list stays in the result (--format json)


def test_routine_history_weighs_less_than_the_diagnosis(pruner):
    doc = pruner.analyse(MEDICAL_ZH, ratio=1)
    assert {s.name: s.weight for s in doc.key_sections}["routine_history"] < 1
    result = pruner.prune(MEDICAL_ZH, budget=40)
    assert "急性结石性胆囊炎" in result.text
    assert "无放射性物质及毒物接触史" not in result.text


def test_key_sections_merge_by_name_across_rule_sets():
    first = RuleSet(name="a", selection={"en": SelectionPolicy(key_sections={
        "fees": KeySection(pattern="fee"), "law": KeySection(pattern="law", weight=3.0)})})
    second = RuleSet(name="b", selection={"en": SelectionPolicy(key_sections={"fees": KeySection(pattern="price")})})
    merged = merged_policy([first, second], "en").key_sections
    assert merged["fees"].pattern == "price" and merged["law"].weight == 3.0


def test_a_bad_key_section_pattern_names_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nselection:\n  en:\n    key_sections:\n      fees: {pattern: 'fee(s'}\n",
                    encoding="utf-8")
    with pytest.raises(RuleError) as err:
        load_file(path)
    assert "bad.yaml" in str(err.value) and "invalid regex" in str(err.value)


def _policy_file(**fields) -> str:
    import tempfile

    import yaml

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, encoding="utf-8") as f:
        yaml.safe_dump({"name": "coverage_off", "selection": {"en": fields, "zh": fields}}, f)
        return f.name


def _cases_zh() -> str:
    """A joined judgments file as the CAIL dev set holds it: each case's header names its cause."""
    causes = ["民间借贷纠纷", "买卖合同纠纷", "机动车交通事故责任纠纷", "离婚纠纷", "劳动争议", "房屋租赁合同纠纷"]
    body = ("经审理查明：原告与被告于2015年3月{d}日签订协议，约定被告向原告支付款项人民币{a}元，被告至今未付。"
            "原告多次催要，被告以资金紧张为由拒绝支付，双方由此发生争议。另查明，被告于2016年{d}月另行出具欠条一份，"
            "载明欠款{a}元及利息，并承诺于同年年底前还清，但至今仍未履行。")
    return "\n".join(f"【案件 {k + 1}｜{cause}】\n" + body.format(d=k + 2, a=1000 * (k + 3)) * 3
                     for k, cause in enumerate(causes))


def test_a_judgment_s_case_headers_are_key_sections_covered_first(tmp_path):
    # legal zh: each case header ('【案件 N｜案由】') is a key section, even where its cause (劳动争议) names a
    # dispute, and coverage keeps the first ones' headers where value per token alone does not
    text = _cases_zh()
    legal = Pruner(domain="legal")
    doc = legal.analyse(text, ratio=1)
    assert [(s.name, s.heading) for s in doc.key_sections] == [("case", True)] * 6
    no_coverage = tmp_path / "off.yaml"
    no_coverage.write_text("name: no_coverage\nselection:\n  zh: {coverage_share: 0.0}\nrules: []\n", encoding="utf-8")
    assert "【案件 1｜民间借贷纠纷】" in legal.prune(text, budget=200).text
    assert "【案件 1｜民间借贷纠纷】" not in Pruner(domain="legal", rules=[no_coverage]).prune(text, budget=200).text
