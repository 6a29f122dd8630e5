"""evals --rule-report: gold per 1,000 tokens of the text each rule touches, on real CUAD contracts."""

from __future__ import annotations

import json

import pytest

from evals.catp_method import UnitView
from evals.rule_report import ALL_UNITS, NO_RULE, doc_rule_stats, rows, unit_gold
from evals.schema import Gold

from _samples import _docs


def unit(start, end, kept, rules=(), tokens=10, deleted=False):
    return UnitView(start, end, kept, list(rules), 0, 0.0, deleted, tokens, tuple(rules))


def test_an_item_over_two_units_is_shared_by_its_characters():
    units = [unit(0, 10, True), unit(11, 20, False), unit(30, 40, False)]
    gold = [Gold(start=5, end=15, quote="x" * 10, kind="clause"), Gold(start=32, end=34, quote="xx", kind="date"),
            Gold(start=50, end=55, quote="xxxxx", kind="date")]  # the last lies outside every unit
    assert unit_gold(units, gold) == pytest.approx([0.5, 0.4, 1.0])


def test_stats_per_rule_split_kept_and_not_kept():
    units = [unit(0, 10, True, ("a", "b"), tokens=4), unit(11, 20, False, ("a",), tokens=6),
             unit(21, 25, False, tokens=2), unit(26, 29, True, ("a",), tokens=3, deleted=True)]
    gold = [Gold(start=0, end=10, quote="x" * 10, kind="clause"), Gold(start=11, end=20, quote="x" * 9, kind="date"),
            Gold(start=21, end=25, quote="x" * 4, kind="date"), Gold(start=26, end=29, quote="xxx", kind="date")]
    stats = doc_rule_stats(units, gold)
    assert stats["a"] == [2, 10, 2.0, 1, 4, 1.0]  # the deleted unit is left out
    assert stats["b"] == [1, 4, 1.0, 1, 4, 1.0]
    assert stats[NO_RULE] == [1, 2, 1.0, 0, 0, 0.0]
    assert stats[ALL_UNITS] == [3, 12, 3.0, 1, 4, 1.0]
    by_rule = {r["rule"]: r for r in rows(stats)}
    assert by_rule["a"]["kept_gold_per_1k"] == pytest.approx(250.0)  # 1 item in 4 kept tokens
    assert by_rule["a"]["unkept_gold_per_1k"] == pytest.approx(1000 / 6, abs=0.01)
    assert rows(stats)[0]["rule"] == ALL_UNITS


def test_rule_report_on_real_contracts(tmp_path):
    """Three CUAD dev contracts (read by path, written to a temporary file): the report's totals agree with
    the pipeline's own units, and the preamble (parties, dates) is denser in gold than the average text."""
    from catp.pipeline import Pruner
    from evals.main import EvalOptions, run_eval

    docs = _docs("cuad", 3)
    data = tmp_path / "cuad3.jsonl"
    data.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    out = tmp_path / "report"
    run_eval(EvalOptions(paths=[data], out=out, ratios="1/6", baselines="", values=False, jobs=1, quiet=True,
                         rule_report=True))
    report = json.loads((out / "rules.json").read_text(encoding="utf-8"))
    table = {r["rule"]: r for r in report["cuad3"]["catp"]["1/6"]}
    pruner = Pruner(domain="legal")
    tokens = kept = 0
    for d in docs:
        doc = pruner.analyse(d["text"], budget=int(pruner.tokens.count(d["text"]) / 6))
        live = [(u, dd) for i, (u, dd) in enumerate(zip(doc.units, doc.decisions)) if not doc.columns.deleted[i]]
        tokens += sum(u.tokens for u, _ in live)
        kept += sum(u.tokens for u, dd in live if dd.kept)
    total = table[ALL_UNITS]
    assert total["tokens"] == tokens and total["kept_tokens_share"] == pytest.approx(kept / tokens, abs=1e-4)
    n_gold = sum(len(d["gold"]) for d in docs)
    assert 0.9 * n_gold <= total["gold"] <= n_gold
    assert table["legal.preamble_en"]["gold_per_1k"] > 2 * total["gold_per_1k"]
    for r in table.values():
        assert r["tokens"] <= total["tokens"] and r["gold"] <= total["gold"] + 1e-6
    md = (out / "rules.md").read_text(encoding="utf-8")
    assert "### cuad3, catp at 1/6" in md and "| legal.preamble_en |" in md
