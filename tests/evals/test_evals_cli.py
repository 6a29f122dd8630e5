"""`catp eval` / `python -m evals` end to end on small hand-made data: report files, plots,
size limits, determinism across worker counts, one-line errors, docs update."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from catp.cli import main as catp_main
from evals.docs import END, START

ROOT = Path(__file__).resolve().parents[2]

EN = ("MASTER SERVICES AGREEMENT\n\nThis Agreement is made on March 5, 2020 between Alpha Corp. and Beta LLC.\n"
      + "".join(f"{i}. The parties shall cooperate on routine item {i} in good faith and without delay.\n"
                for i in range(1, 60))
      + "The Buyer shall pay a fee of $250,000 within thirty (30) days.\n"
      + "".join(f"Clause {i}: notices go to the addresses above unless changed in writing.\n" for i in range(60, 90)))
ZH = ("【判决书】\n" + "".join(f"经审理查明，第{i}项事实与本案争议无关，双方均无异议。\n" for i in range(1, 50))
      + "被告应于2019年3月5日前向原告支付货款120000元。\n"
      + "".join(f"另查明，第{i}项情况属实。\n" for i in range(50, 80)))


def _gold(text, quote, kind, label):
    start = text.index(quote)
    return {"start": start, "end": start + len(quote), "quote": quote, "kind": kind, "label": label}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("data")
    en = {"id": "en1", "domain": "legal", "lang": "en", "text": EN,
          "gold": [_gold(EN, "March 5, 2020", "date", "Agreement Date"),
                   _gold(EN, "$250,000", "amount", "Fee"),
                   _gold(EN, "Alpha Corp.", "entity", "Parties")],
          "questions": [{"question": "How much is the fee?", "answer": "$250,000", "gold_index": [1], "support": "any"},
                        {"question": "When and who?", "answer": "", "gold_index": [0, 2], "support": "all"}]}
    zh = {"id": "zh1", "domain": "legal", "lang": "zh", "text": ZH,
          "gold": [_gold(ZH, "2019年3月5日", "date", "日期"), _gold(ZH, "120000元", "amount", "金额")]}
    (folder / "mini_en.jsonl").write_text(json.dumps(en, ensure_ascii=False) + "\n")
    (folder / "mini_zh.jsonl").write_text(json.dumps(zh, ensure_ascii=False) + "\n")
    return folder


def _run(args) -> int:
    return catp_main(["eval", *args])


def _numbers(payload):
    """Everything but timings."""
    sets = json.loads(json.dumps(payload["sets"]))
    for data in sets.values():
        for per_budget in data["methods"].values():
            for m in per_budget.values():
                m.pop("latency")
    return sets


@pytest.fixture(scope="module")
def token_report(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    assert _run([str(data_dir), "--ratios", "1/6,1/2", "--out", str(out), "--jobs", "1", "--question-aware"]) == 0
    return out


def test_report_folder_holds_json_markdown_html_and_plots(token_report):
    payload = json.loads((token_report / "results.json").read_text())
    assert set(payload["sets"]) == {"mini_en", "mini_zh"}
    methods = payload["sets"]["mini_en"]["methods"]
    assert set(methods) >= {"catp", "head", "middle-out", "random"}
    en = methods["catp"]["1/6"]
    assert set(en["kept"]) == {"all", "amount", "date", "entity"}
    assert en["questions_n"] == 2 and en["questions_aware"] is not None
    assert set(en["latency"]) == {"p50_ms", "p95_ms", "p99_ms", "max_ms", "tokens_per_s"}
    assert en["values"]["all"] is not None  # the independent extractor found values
    assert "llmlingua2" in payload["skipped"] or "llmlingua2" in methods
    md = (token_report / "report.md").read_text()
    assert "| mini_en | 1/6 | catp |" in md and "![mini_en](plots/mini_en.png)" in md
    assert "<table>" in (token_report / "report.html").read_text()
    for name in ("mini_en", "mini_zh"):
        assert (token_report / "plots" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (token_report / "failures.md").read_text().startswith("## mini_en")


def test_outputs_respect_the_token_budget(token_report):
    payload = json.loads((token_report / "results.json").read_text())
    for data in payload["sets"].values():
        for name, per_budget in data["methods"].items():
            for label, m in per_budget.items():
                assert m["over_budget_docs"] == 0, (name, label)
                assert m["size_tokens"] <= {"1/6": 1 / 6, "1/2": 1 / 2}[label] + 1e-9


def test_char_sizes_and_same_numbers_with_two_workers(data_dir, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    common = ["--ratios", "1/4", "--size", "chars", "--baselines", "head,middle-out,random,oracle"]
    assert _run([str(data_dir), *common, "--out", str(one), "--jobs", "1"]) == 0
    assert _run(["--data", str(data_dir / "mini_en.jsonl"), "--data", str(data_dir / "mini_zh.jsonl"),
                 *common, "--out", str(two), "--jobs", "2"]) == 0
    a = json.loads((one / "results.json").read_text())
    b = json.loads((two / "results.json").read_text())
    assert _numbers(a) == _numbers(b)
    for data in a["sets"].values():  # the gold-reading oracle keeps every item of these small documents
        assert data["methods"]["oracle"]["1/4"]["kept"]["all"] == 1.0
    for data in a["sets"].values():
        for m in data["methods"].values():
            assert m["1/4"]["size_chars"] <= 0.25 + 1e-9


@pytest.mark.parametrize("args, message", [
    (["/no/such/folder"], "no such file"),
    (["{data}", "--ratios", "1/0"], "invalid ratio"),
    (["{data}", "--size", "bytes"], "--size must be tokens or chars"),
    (["{data}", "--ratios", "1/6", "--budgets", "100"], "not both"),
    (["{data}", "--baselines", "tail"], "unknown baseline"),
    (["{data}", "--against", "x.yaml"], "rule file not found"),
    ([], "at least one data file"),
])
def test_bad_input_is_one_line_and_exit_code_2(data_dir, tmp_path, capsys, args, message):
    args = [a.replace("{data}", str(data_dir)) for a in args]
    assert _run([*args, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_bad_rule_file_is_one_line(data_dir, tmp_path, capsys):
    rules = tmp_path / "bad.yaml"
    rules.write_text("name: bad\nrules:\n  - id: x\n    kind: regex\n")
    assert _run([str(data_dir), "--rules", str(rules), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "bad.yaml" in err and len(err.splitlines()) == 1


def test_python_m_evals_and_docs_update(data_dir, tmp_path):
    doc = tmp_path / "evals.md"
    doc.write_text(f"# Evals\n\nintro\n\n{START}\nold table\n{END}\n\nmore text\n")
    proc = subprocess.run([sys.executable, "-m", "evals", "--data", str(data_dir / "mini_en.jsonl"), "--ratios", "1/4",
                           "--out", str(tmp_path / "r"), "--no-values", "--baselines", "head", "--jobs", "1",
                           "--update-docs", str(doc)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    text = doc.read_text()
    assert "old table" not in text and text.startswith("# Evals\n\nintro") and text.endswith("more text\n")
    assert "python -m evals --data" in text and "| mini_en | 1/4 | catp |" in text
    assert "mini_en" in proc.stdout and "head" in proc.stdout  # the terminal table


def test_items_lists_every_gold_item_once_per_method_and_budget(data_dir, tmp_path):
    """--items writes each gold item's fate; its kept flags give back the report's shares."""
    out = tmp_path / "items-report"
    assert _run([str(data_dir), "--ratios", "1/6,1/2", "--baselines", "head", "--no-values", "--items",
                 "--out", str(out), "--jobs", "1"]) == 0
    rows = [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == (3 + 2) * 2 * 2  # gold items x methods (catp, head) x budgets
    payload = json.loads((out / "results.json").read_text())
    for set_name, data in payload["sets"].items():
        for method, per_budget in data["methods"].items():
            for budget, scores in per_budget.items():
                mine = [r["kept"] for r in rows if (r["set"], r["method"], r["budget"]) == (set_name, method, budget)]
                assert mine and sum(mine) / len(mine) == pytest.approx(scores["kept"]["all"])
    first = next(r for r in rows if r["doc"] == "en1" and r["gold_index"] == 1)
    assert (first["kind"], first["label"], EN[first["start"]:first["end"]]) == ("amount", "Fee", "$250,000")
    assert not (tmp_path / "plain").exists()
    assert _run([str(data_dir), "--baselines", "", "--no-values", "--out", str(tmp_path / "plain"), "--jobs", "1"]) == 0
    assert not (tmp_path / "plain" / "items.jsonl").exists()  # only when asked
