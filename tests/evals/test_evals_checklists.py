"""Key-fact checklists (evals/checklists): the loader's checks, the real checklist files, and `catp eval`
scoring them per kind and per document with every lost fact in failures.md."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from catp.cli import main as catp_main
from evals.loaders import DataError, load_paths
from evals.loaders.checklist import FACT_KINDS
from evals.metrics import normalise

ROOT = Path(__file__).resolve().parents[2]
CHECKLISTS = ROOT / "evals" / "checklists"
SHARED = ROOT.parent / "shared" / "evals-data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/evals-data is not next to this clone")

TEXT = ("LICENCE AGREEMENT\n\nThis Agreement is made on March 5, 2020 between Alpha Corp. and Beta LLC.\n"
        + "".join(f"{i}. The parties shall cooperate on routine item {i} in good faith.\n" for i in range(1, 40))
        + "The Licensee shall pay an upfront fee of $250,000 within thirty (30) days.\n"
        + "".join(f"Clause {i}: notices go to the addresses above.\n" for i in range(40, 70))
        + "This Agreement is governed by the laws of  England.\n")


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _entry(**over) -> dict:
    entry = {"id": "lic", "domain": "legal", "lang": "en", "text": TEXT,
             "facts": [{"quote": "Alpha Corp.", "kind": "party", "why": "licensor"},
                       {"quote": "upfront fee of $250,000", "kind": "fee", "why": "upfront fee"},
                       {"quote": "governed by the laws of England", "kind": "governing_law", "why": "law"}]}
    entry.update(over)
    return entry


# -- the loader ----------------------------------------------------------------------------------

def test_facts_become_gold_at_their_quote_ignoring_whitespace(tmp_path):
    [data] = load_paths([_write(tmp_path / "mini.jsonl", [_entry()])])
    assert data.kind == "checklist" and data.name == "mini"
    [doc] = data.docs
    assert [(g.kind, g.why) for g in doc.gold] == [("party", "licensor"), ("fee", "upfront fee"), ("governing_law", "law")]
    for g in doc.gold:
        assert doc.text[g.start:g.end] == g.quote
    assert doc.gold[2].quote == "governed by the laws of  England"  # two spaces in the text, one in the fact


def test_after_picks_a_later_occurrence(tmp_path):
    facts = [{"quote": "Agreement", "kind": "party", "why": "first"},
             {"quote": "Agreement", "kind": "governing_law", "why": "the one in the law clause", "after": "Clause 69"}]
    [data] = load_paths([_write(tmp_path / "a.jsonl", [_entry(facts=facts)])])
    first, later = data.docs[0].gold
    assert first.start == TEXT.index("Agreement")
    assert later.start == TEXT.index("This Agreement is governed") + len("This ")


@pytest.mark.parametrize("change, message", [
    ({"facts": [{"quote": "a fee of $999", "kind": "fee", "why": "x"}]}, r":1: facts\[0\] \(fee\): quote 'a fee of \$999' is not in document 'lic'"),
    ({"facts": [{"quote": "Alpha", "kind": "price", "why": "x"}]}, r":1: facts\.0\.kind: unknown kind 'price'"),
    ({"facts": [{"quote": "Alpha", "kind": "party", "why": "x", "after": "no such text"}]}, r"its `after` text 'no such text'"),
    ({"facts": []}, r":1: facts: "),
    ({"file": "x.txt"}, r"as `text` or as `file`"),
    ({"text": None, "file": "missing.txt"}, r"document file missing.txt not found"),
    ({"text": None, "file": "data.jsonl", "doc": "nope"}, r"no document 'nope' in data.jsonl"),
    ({"text": "   "}, r"the document of 'lic' is empty"),
])
def test_bad_checklists_are_refused_naming_line_and_fact(tmp_path, change, message):
    _write(tmp_path / "data.jsonl", [{"id": "d1", "text": TEXT}])
    path = _write(tmp_path / "bad.jsonl", [_entry(**change)])
    with pytest.raises(DataError, match=message):
        load_paths([path])


def test_documents_by_reference_text_file_and_data_set(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lic.txt").write_text(TEXT, encoding="utf-8")
    _write(tmp_path / "docs" / "set.jsonl", [{"id": "other", "text": "x"},
                                              {"id": "d7", "domain": "legal", "lang": "en", "text": TEXT}])
    (tmp_path / "lists").mkdir()
    path = _write(tmp_path / "lists" / "refs.jsonl", [_entry(text=None, file="../docs/lic.txt"),
                                                      _entry(id="dev", text=None, domain=None, lang=None,
                                                             file="../docs/set.jsonl", doc="d7")])
    [data] = load_paths([path])
    assert [d.text for d in data.docs] == [TEXT, TEXT]
    assert data.docs[1].domain == "legal" and "set.jsonl d7" in data.docs[1].source
    with pytest.raises(DataError, match=r":2: duplicate id 'lic'"):
        load_paths([_write(tmp_path / "dup.jsonl", [_entry(), _entry()])])


# -- the real checklists ----------------------------------------------------------------------------

def _checked(data) -> Counter:
    kinds = Counter()
    for doc in data.docs:
        assert doc.gold, doc.id
        for g in doc.gold:
            assert g.kind in FACT_KINDS and g.why
            assert normalise(g.quote) and normalise(doc.text[g.start:g.end]) == normalise(g.quote)
            kinds[g.kind] += 1
    return kinds


def test_the_five_examples_have_checklists():
    [data] = load_paths([CHECKLISTS / "examples.jsonl"])
    assert sorted(d.id for d in data.docs) == ["announcement_zh", "contract_en", "contract_zh", "medical_zh", "report_en"]
    assert {d.id: d.domain for d in data.docs}["medical_zh"] == "medical"
    kinds = _checked(data)
    assert sum(kinds.values()) >= 200
    for must in ("party", "fee", "liability", "termination", "dispute", "diagnosis", "drug", "figure", "guidance"):
        assert kinds[must], must
    issue_22 = {g.quote for d in data.docs for g in d.gold}  # the losses the issue names must be on the list
    assert {"THREE MILLION US DOLLARS (US$3,000,000)", "甲方（买方）：苏州恒新智能制造有限公司"} <= issue_22


def test_the_long_chinese_contract():
    [data] = load_paths([CHECKLISTS / "contract_zh_long.jsonl"])
    [doc] = data.docs
    assert len(doc.text) >= 15_000 and doc.lang == "zh" and doc.domain == "legal"
    kinds = _checked(data)
    for must in ("party", "fee", "payment", "liability", "termination", "governing_law", "dispute"):
        assert kinds[must], must


@needs_shared
def test_dev_checklists_cover_every_source_and_follow_the_selection_rule():
    [data] = load_paths([CHECKLISTS / "dev.jsonl"])
    ids = [d.id for d in data.docs]
    assert len(ids) >= 20
    prefixes = ("cuad-", "tatqa-", "e3c-en-", "ccks2017-", "cail2019-")
    by_source = Counter(next(p for p in prefixes if i.startswith(p)) for i in ids)
    assert all(by_source[p] >= 4 for p in prefixes), by_source
    for prefix, name in zip(prefixes, ("cuad", "tatqa", "e3c_en", "ccks2017_cner", "cail2019_cjrc")):
        rows = sorted((r["id"], len(r["text"])) for r in map(json.loads, open(SHARED / f"{name}.dev.jsonl", encoding="utf-8")))
        first_four = [i for i, n in rows if 5_000 <= n <= 20_000][:4]  # the rule in evals/checklists/README.md
        assert first_four == [i for i in ids if i.startswith(prefix)][:4]
    kinds = _checked(data)
    assert sum(kinds.values()) >= 300
    assert sum(n >= 10 for n in kinds.values()) >= 10, kinds


# -- scoring ------------------------------------------------------------------------------------------

def _lost_headings(failures_md: str) -> set[tuple[str, int, str]]:
    return {(m[1], int(m[2]), m[3]) for m in re.finditer(r"^### (\S+) · fact #(\d+) · .* · (catp at \S+)$", failures_md, re.M)}


def test_eval_scores_per_kind_and_document_and_lists_every_lost_fact(tmp_path):
    facts = ([{"quote": f"routine item {i} in", "kind": "obligation", "why": f"item {i}"} for i in range(1, 40, 3)]
             + _entry()["facts"])
    path = _write(tmp_path / "mini.jsonl", [_entry(facts=facts), _entry(id="second", facts=facts[-3:])])
    out = tmp_path / "report"
    assert catp_main(["eval", "--data", str(path), "--ratios", "1/8,1/3", "--baselines", "head", "--no-values",
                      "--jobs", "1", "--items", "--out", str(out)]) == 0
    payload = json.loads((out / "results.json").read_text())
    m = payload["sets"]["mini"]["methods"]
    head = m["head"]["1/8"]  # the head keeps the opening party and the first items, not the fee or the law
    assert head["per_doc"]["lic"]["n"] == 16 and 1 < head["per_doc"]["lic"]["kept"] < 16
    assert head["per_doc"]["second"] == {"kept": 1, "n": 3}
    assert head["kept"]["party"] == 1.0 and head["kept"]["fee"] == 0.0 and head["kept"]["governing_law"] == 0.0
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    lost = {(i["doc"], i["gold_index"], f"catp at {i['budget']}") for i in items if i["method"] == "catp" and not i["kept"]}
    assert lost, "at 1/8 catp must lose some routine items"
    failures = (out / "failures.md").read_text()
    assert failures.startswith("## mini: every lost fact")
    assert _lost_headings(failures) == lost  # every lost fact, and only those
    assert re.search(r"· obligation: item \d+ · catp at 1/8", failures)  # the fact's why is shown
    report = (out / "report.md").read_text()
    assert "### mini: share of facts kept per document" in report
    assert "| lic | 16 |" in report and "| second | 3 |" in report
    assert "share kept per label" not in report


@pytest.mark.slow
def test_eval_on_the_real_example_checklists(tmp_path):
    out = tmp_path / "report"
    assert catp_main(["eval", "--data", str(CHECKLISTS / "examples.jsonl"), "--ratios", "1/6", "--baselines", "head",
                      "--no-values", "--jobs", "1", "--out", str(out)]) == 0
    payload = json.loads((out / "results.json").read_text())
    catp = payload["sets"]["examples"]["methods"]["catp"]["1/6"]
    per_doc = catp["per_doc"]
    assert sorted(per_doc) == ["announcement_zh", "contract_en", "contract_zh", "medical_zh", "report_en"]
    n_lost = sum(c["n"] - c["kept"] for c in per_doc.values())
    assert catp["counts"]["all"] == sum(c["n"] for c in per_doc.values())
    assert abs(catp["kept"]["all"] - (1 - n_lost / catp["counts"]["all"])) < 1e-9
    assert len(_lost_headings((out / "failures.md").read_text())) == n_lost
