"""Comparison mode: --rules A.yaml --against B.yaml gives per-label deltas (A - B)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.aggregate import compare
from evals.main import EvalOptions, run_eval

RULE = """name: {name}
version: 1
rules:
  - id: test.{name}
    kind: phrases
    category: cue
    priority: 100
    action: {action}
    phrases: ["zebra code"]
    expand: sentence
"""


def test_compare_computes_deltas_per_kind_and_label():
    def method(all_, clause, by_label):
        return {"1/6": {"kept": {"all": all_, "clause": clause}, "counts": {"all": 4, "clause": 4},
                        "labels": [{"kind": "clause", "label": k, "n": 2, "kept": v} for k, v in by_label.items()]}}

    aggregated = {"s": {"methods": {"A": method(0.75, 0.75, {"x": 1.0, "y": 0.5}),
                                    "B": method(0.25, 0.25, {"x": 0.0, "y": 0.5})}}}
    rows = compare(aggregated, "A", "B")["s"]["1/6"]
    deltas = {(r["kind"], r["label"]): r["delta"] for r in rows}
    assert deltas[("all", "(all)")] == pytest.approx(0.5)
    assert deltas[("clause", "x")] == pytest.approx(1.0)
    assert deltas[("clause", "y")] == pytest.approx(0.0)


def _fixture(tmp_path: Path) -> Path:
    filler = " ".join(f"Filler sentence number {i} talks about routine matters of the parties." for i in range(40))
    tail = " ".join(f"More filler {i} on other things entirely." for i in range(40))
    key = "The zebra code is 7781."
    text = f"{filler} {key} {tail}"
    start = text.index(key)
    other = text.index("Filler sentence number 30")
    gold = [{"start": start, "end": start + len(key), "quote": key, "kind": "clause", "label": "zebra"},
            {"start": other, "end": other + 25, "quote": text[other:other + 25], "kind": "clause", "label": "filler"}]
    path = tmp_path / "zebra.jsonl"
    path.write_text(json.dumps({"id": "z1", "domain": "legal", "text": text, "gold": gold}) + "\n")
    return path


def test_rules_against_rules_end_to_end(tmp_path):
    keep, drop = tmp_path / "keep.yaml", tmp_path / "drop.yaml"
    keep.write_text(RULE.format(name="keep", action="protect"))
    drop.write_text(RULE.format(name="drop", action="delete"))
    out = tmp_path / "report"
    payload = run_eval(EvalOptions(paths=[_fixture(tmp_path)], out=out, rules=[keep], against=[drop],
                                   ratios="1/10", baselines="", values=False, jobs=1, quiet=True))
    rows = payload["comparison"]["zebra"]["1/10"]
    zebra = next(r for r in rows if r["label"] == "zebra")
    assert (zebra["a"], zebra["b"], zebra["delta"]) == (1.0, 0.0, 1.0)
    assert set(payload["sets"]["zebra"]["methods"]) == {"catp:keep", "catp:drop"}
    assert "catp:keep vs catp:drop" in (out / "report.md").read_text()


def test_rules_against_builtin_and_the_report_s_intervals(tmp_path):
    """Issue 25: `--against builtin` compares with the built-in rules alone (no empty rule file written by hand);
    the report gives a bootstrap 95 % interval and the per-document spread; report.html renders `code`."""
    from evals.aggregate import bootstrap_ci, spread

    keep = tmp_path / "keep.yaml"
    keep.write_text(RULE.format(name="keep", action="protect"))
    out = tmp_path / "report"
    payload = run_eval(EvalOptions(paths=[_fixture(tmp_path)], out=out, rules=[keep], against=[Path("builtin")],
                                   ratios="1/10", baselines="", values=False, jobs=1, quiet=True, command="catp eval --ratios 1/10"))
    assert set(payload["sets"]["zebra"]["methods"]) == {"catp:keep", "catp:builtin"}
    assert "catp:keep vs catp:builtin" in (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    assert "<code>catp eval --ratios 1/10</code>" in page and "`" not in page
    assert "95% CI" in page and "p90" in page
    per_doc = [(1, 2), (2, 2), (0, 4), (3, 3), (1, 5)] * 4
    low, high = bootstrap_ci(per_doc)
    assert low < sum(k for k, _ in per_doc) / sum(n for _, n in per_doc) < high and (low, high) == tuple(bootstrap_ci(per_doc))
    assert spread([0.5, 1.0, 0.0, 0.25]) == {"min": 0.0, "p10": 0.0, "p50": 0.5, "p90": 1.0, "max": 1.0}
