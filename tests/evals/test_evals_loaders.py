"""Loaders: the CUAD raw layout (fixture under tests/data/cuad_raw), JSONL errors, other raw formats,
and the shared dev sets when present."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evals.loaders import DataError, load_cjrc_raw, load_paths
from evals.locate import WhitespaceIndex

ROOT = Path(__file__).resolve().parents[2]
CUAD_RAW = ROOT / "tests" / "data" / "cuad_raw"
SHARED = ROOT.parent / "shared" / "evals-data"


def by_label(doc):
    out = {}
    for g in doc.gold:
        out.setdefault(g.label, []).append(g)
    return out


def test_whitespace_tolerant_locate():
    text = "The  total\nliability   shall not exceed $5."
    index = WhitespaceIndex(text)
    start, end = index.find("total liability shall")
    assert text[start:end] == "total\nliability   shall"
    assert index.find("liability shall not", start=30) is None
    assert index.find("   ") is None


def test_cuad_raw_excerpts_are_located_with_kinds_and_questions():
    [data] = load_paths([CUAD_RAW])
    assert [d.id for d in data.docs] == ["AlphaCorp_20200101_EX-10.1_Supply Agreement",
                                         "GammaInc_20190707_EX-99_License Agreement"]
    alpha = data.docs[0]
    labels = by_label(alpha)
    assert labels["Document Name"][0].quote == "SUPPLY   AGREEMENT"  # runs of spaces in the text
    assert [g.quote for g in labels["Parties"]] == ["Alpha Corp.", "Supplier", "Beta\nLLC", "Buyer"]
    assert {g.kind for g in labels["Parties"]} == {"entity"}
    assert labels["Agreement Date"][0].kind == "date"
    notice = labels["Notice Period To Terminate Renewal"][0]
    assert notice.quote.startswith("renews\nautomatically") and notice.kind == "date"
    # '<omitted>' joins two pieces: each is its own gold item
    assert [g.quote for g in labels["Cap On Liability"]] == [
        "In no event shall Supplier's total liability exceed\n$250,000.", "This cap does not apply to fraud."]
    assert {g.kind for g in labels["Cap On Liability"]} == {"amount"}
    assert "Governing Law" not in labels  # its excerpt has a typo: not found, and counted
    for g in alpha.gold:
        assert alpha.text[g.start:g.end] == g.quote
    questions = {q.question: q for q in alpha.questions}
    date_q = questions["What is the Agreement Date of this contract?"]
    assert date_q.answer == "3/5/20" and [alpha.gold[i].label for i in date_q.gold_index] == ["Agreement Date"]
    assert "What is the Notice Period To Terminate Renewal of this contract?" in questions  # '- Answer' header
    assert any("no text file" in w and "MissingCo" in w for w in data.warnings)
    assert any("1 excerpts" in w for w in data.warnings)
    gamma = data.docs[1]  # '.PDF' in the CSV, '.txt' on disk
    assert [g.quote for g in by_label(gamma)["Parties"]] == ["Gamma Inc.", "Delta Ltd."]


def test_cuad_raw_without_text_folder_is_an_error(tmp_path):
    (tmp_path / "master_clauses.csv").write_text("Filename,Parties,Parties-Answer\n")
    with pytest.raises(DataError, match="full_contract_txt"):
        load_paths([tmp_path])


def _jsonl(tmp_path, records, name="mini.dev.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    return path


def test_jsonl_set_name_and_missing_questions(tmp_path):
    text = "The fee is $5."
    path = _jsonl(tmp_path, [{"id": "a", "text": text, "gold": [{"start": 11, "end": 13, "quote": "$5", "kind": "amount"}]}])
    [data] = load_paths([path])
    assert data.name == "mini" and data.docs[0].questions == []


def test_jsonl_bad_offsets_name_the_line(tmp_path):
    good = {"id": "a", "text": "abc", "gold": []}
    bad = {"id": "b", "text": "abc", "gold": [{"start": 0, "end": 2, "quote": "bc", "kind": "x"}]}
    with pytest.raises(DataError, match=r"mini\.dev\.jsonl:2: gold"):
        load_paths([_jsonl(tmp_path, [good, bad])])


def test_jsonl_not_json_and_missing_path(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{oops\n')
    with pytest.raises(DataError, match="broken.jsonl:2: not JSON"):
        load_paths([path])
    with pytest.raises(DataError, match="no such file"):
        load_paths([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no eval data"):
        load_paths([tmp_path / "empty"])


def test_tatqa_raw_builds_evidence_answers_and_all_support(tmp_path):
    contexts = [{
        "table": {"uid": "t1", "table": [["", "2019", "2018"], ["Revenue", "$1,200", "$1,000"]]},
        "paragraphs": [{"uid": "p1", "order": 1, "text": "Revenue grew because of new contracts."},
                       {"uid": "p2", "order": 2, "text": "Costs were flat."}],
        "questions": [{"uid": "q1", "order": 1, "question": "Why did revenue grow?", "answer": ["new contracts"],
                       "answer_type": "span", "answer_from": "text", "rel_paragraphs": ["1"]},
                      {"uid": "q2", "order": 2, "question": "Change?", "answer": 200, "answer_type": "arithmetic",
                       "answer_from": "table", "rel_paragraphs": [], "facts": ["$1,200", "$1,000"]}],
    }]
    path = tmp_path / "tatqa_dataset_dev.json"
    path.write_text(json.dumps(contexts))
    [data] = load_paths([path])
    doc = data.docs[0]
    assert doc.text.startswith("=== Excerpt 1 ===\n | 2019 | 2018\nRevenue | $1,200 | $1,000\n")
    kinds = [(g.kind, g.quote) for g in doc.gold]
    assert ("evidence", "Revenue grew because of new contracts.") in kinds
    assert ("answer", "new contracts") in kinds
    assert ("number", "$1,200") in kinds and ("number", "$1,000") in kinds
    assert [q.support for q in doc.questions] == ["all", "all"]
    assert len(doc.questions[1].gold_index) == 2


def test_brat_and_bio(tmp_path):
    (tmp_path / "brat").mkdir()
    (tmp_path / "brat" / "r1.txt").write_text("患者腹痛三天，查血常规。")
    (tmp_path / "brat" / "r1.ann").write_text("T1\t症状和体征 2 4\t腹痛\nT2\t检查和检验 8 11\t血常规\n#1\tnote\n")
    [brat] = load_paths([tmp_path / "brat"], domain="medical")
    doc = brat.docs[0]
    assert [(g.label, g.quote) for g in doc.gold] == [("症状和体征", "腹痛"), ("检查和检验", "血常规")]
    assert doc.lang == "zh" and doc.domain == "medical"
    bio = tmp_path / "r2.bio"
    bio.write_text("患 O\n者 O\n腹 B-SYM\n痛 I-SYM\n\n查 O\n血 B-EXAM\n常 I-EXAM\n规 I-EXAM\n")
    [data] = load_paths([bio])
    d = data.docs[0]
    assert d.text == "患者腹痛\n查血常规"
    assert [(g.label, g.quote) for g in d.gold] == [("SYM", "腹痛"), ("EXAM", "血常规")]
    bio.write_text("患 O\n者\n")
    with pytest.raises(DataError, match=r"r2\.bio:2"):
        load_paths([bio])


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared dev sets not present at ../shared/evals-data")
def test_shared_dev_sets_load_with_the_readme_counts():
    sets = {s.name: s for s in load_paths([SHARED])}
    expected = {"cuad": (312, 8465, 862), "cail2019_cjrc": (27, 6747, 4505), "ccks2017_cner": (13, 23751, 0),
                "tatqa": (27, 2501, 1759), "e3c_en": (8, 2608, 0)}
    for name, (docs, gold, questions) in expected.items():
        data = sets[name]
        assert len(data.docs) == docs
        assert sum(len(d.gold) for d in data.docs) == gold
        assert sum(len(d.questions) for d in data.docs) == questions


def cjrc_raw_from_shared(doc: dict, impossible: str) -> list[dict]:
    """The public CAIL2019/CJRC json for one shared cail2019 document: its cases split at the
    converter's header lines, each span answer repeated as often as its label says annotators
    gave it, YES/NO answers at -1, plus one unanswerable question per case (to be dropped)."""
    text, gold = doc["text"], doc["gold"]
    heads = list(re.finditer(r"【案件 (\d+)｜([^】]*)】\n", text))
    bounds = [(h.end(), (heads[i + 1].start() - 2) if i + 1 < len(heads) else len(text)) for i, h in enumerate(heads)]
    cases = [{"paragraphs": [{"context": text[a:b], "casename": h.group(2), "qas": []}], "caseid": h.group(1),
              "domain": "civil"} for h, (a, b) in zip(heads, bounds)]

    def case_of(pos: int) -> int:
        return max(i for i, (a, _) in enumerate(bounds) if a <= pos)

    current = 0
    for n, q in enumerate(doc["questions"]):
        answers = []
        for i in q["gold_index"]:
            g = gold[i]
            current = case_of(g["start"])
            votes = int(re.search(r"\((\d)/3 annotators\)", g["label"]).group(1))
            answers += [{"answer_start": g["start"] - bounds[current][0], "text": g["quote"]}] * votes
        if not q["gold_index"]:
            answers = [{"answer_start": -1, "text": q["answer"]}] * 3
        answers += [{"answer_start": -1, "text": ""}] * (3 - len(answers))  # an annotator without a span
        cases[current]["paragraphs"][0]["qas"].append({"question": q["question"], "answers": answers,
                                                       "id": f"{n}", "is_impossible": "false"})
    for case in cases:
        case["paragraphs"][0]["qas"].append({"question": impossible, "id": "x", "is_impossible": "true",
                                             "answers": [{"answer_start": -1, "text": ""}] * 3})
    return cases


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared dev sets not present at ../shared/evals-data")
def test_cjrc_raw_json_rebuilds_the_shared_cail_documents(tmp_path):
    lines = (SHARED / "cail2019_cjrc.dev.jsonl").read_text(encoding="utf-8").splitlines()
    shared = [json.loads(line) for line in lines[:2]]
    impossible = "这个问题无法回答？"
    raw = {"version": "1.0", "data": [c for d in shared for c in cjrc_raw_from_shared(d, impossible)]}
    path = tmp_path / "cail2019_cjrc.dev.json"
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    [data] = load_paths([path])  # found by its shape; cases joined to >= 15,000 characters
    assert data.name == "cail2019_cjrc" and not data.warnings
    assert "".join(d.text for d in data.docs).replace("\n\n", "") == "".join(
        d["text"] for d in shared).replace("\n\n", "")
    assert sum(len(d.gold) for d in data.docs) == sum(len(d["gold"]) for d in shared)
    # the cases of one shared document, joined whole: the same text, gold and questions
    for n, want in enumerate(shared):
        one = tmp_path / f"one{n}.json"
        one.write_text(json.dumps({"data": cjrc_raw_from_shared(want, impossible)}, ensure_ascii=False))
        [data] = load_cjrc_raw(one, min_chars=10**9)
        [got] = data.docs
        assert got.text == want["text"] and got.lang == "zh" and got.domain == "legal"
        assert [(g.start, g.end, g.quote, g.kind, g.label) for g in got.gold] == [
            (g["start"], g["end"], g["quote"], g["kind"], g["label"]) for g in want["gold"]]
        assert [(q.question, q.answer, q.gold_index, q.support) for q in got.questions] == [
            (q["question"], q["answer"], q["gold_index"], q["support"]) for q in want["questions"]]
        assert impossible not in {q.question for q in got.questions}


CAS, CUSTOM, XMI = "http:///uima/cas.ecore", "http:///webanno/custom.ecore", "http://www.omg.org/XMI"


def e3c_xmi_from_shared(doc: dict, folder: Path) -> None:
    """E3C's distributed form (one WebAnno XMI per case report) of one shared e3c document: split
    at the converter's header lines, every gold item back as its custom:* annotation."""
    from xml.etree import ElementTree as ET

    for prefix, uri in (("xmi", XMI), ("cas", CAS), ("custom", CUSTOM)):
        ET.register_namespace(prefix, uri)
    text = doc["text"]
    heads = list(re.finditer(r"=== (\S+) \((.*?)\) ===\n", text))
    for i, h in enumerate(heads):
        a, b = h.end(), (heads[i + 1].start() - 2) if i + 1 < len(heads) else len(text)
        root = ET.Element(f"{{{XMI}}}XMI", {f"{{{XMI}}}version": "2.0"})
        ET.SubElement(root, f"{{{CAS}}}Sofa", {f"{{{XMI}}}id": "1", "sofaNum": "1", "sofaString": text[a:b]})
        ET.SubElement(root, f"{{{CUSTOM}}}METADATA", {"docName": h.group(1), "docSource": h.group(2)})
        ET.SubElement(root, f"{{{CUSTOM}}}EVENT", {"begin": "0", "end": "4"})  # not gold in the shared set
        for g in reversed(doc["gold"]):  # any order in the file
            if a <= g["start"] < b:
                label, _, cls = g["label"].partition(":")
                attrs = {"sofa": "1", "begin": str(g["start"] - a), "end": str(g["end"] - a)}
                if cls:
                    attrs["timex3Class"] = cls
                ET.SubElement(root, f"{{{CUSTOM}}}{label}", attrs)
        ET.ElementTree(root).write(folder / f"{h.group(1)}.xml", encoding="utf-8", xml_declaration=True)


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared dev sets not present at ../shared/evals-data")
def test_e3c_xmi_rebuilds_the_shared_e3c_documents(tmp_path):
    from evals.loaders import load_e3c_xmi

    shared = [json.loads(line) for line in (SHARED / "e3c_en.dev.jsonl").read_text(encoding="utf-8").splitlines()]
    for n, want in enumerate(shared[:3]):
        folder = tmp_path / f"layer1-{n}"
        folder.mkdir()
        e3c_xmi_from_shared(want, folder)
        [data] = load_paths([folder])  # found by its shape
        assert sum(len(d.gold) for d in data.docs) == len(want["gold"])
        [data] = load_e3c_xmi(folder, min_chars=10**9)
        [got] = data.docs
        assert got.text == want["text"] and got.lang == "en" and got.domain == "medical"
        assert [(g.start, g.end) for g in got.gold] == [(g["start"], g["end"]) for g in want["gold"]]
        assert sorted((g.start, g.end, g.quote, g.kind, g.label) for g in got.gold) == sorted(
            (g["start"], g["end"], g["quote"], g["kind"], g["label"]) for g in want["gold"])  # ties: any order
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.xml").write_text('<?xml version="1.0"?><xmi:XMI xmlns:xmi="x"><cas:Sofa')
    with pytest.raises(DataError, match=r"x\.xml: not XML"):
        load_e3c_xmi(tmp_path / "bad")


def ccks_raw_from_shared(doc: dict, folder: Path) -> None:
    """CCKS 2017's distributed form of one shared ccks document: per record and section a
    `<section>-<n>.txtoriginal.txt` and its `<section>-<n>.txt` lines (entity, start, end
    inclusive, label), split at the converter's header lines."""
    text = doc["text"]
    heads = list(re.finditer(r"〔病历 (\d+)〕|\n【(.*?)】\n", text))
    record = None
    for i, h in enumerate(heads):
        if h.group(1):
            record = h.group(1)
            continue
        a = h.end()
        b = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        if i + 1 < len(heads) and heads[i + 1].group(1):
            b -= 2  # the blank line between records
        section = h.group(2)
        (folder / section).mkdir(exist_ok=True)
        (folder / section / f"{section}-{record}.txtoriginal.txt").write_text(text[a:b] + "\n", encoding="utf-8")
        lines = [f"{g['quote']}\t{g['start'] - a}\t{g['end'] - a - 1}\t{g['label']}"
                 for g in doc["gold"] if a <= g["start"] < b]
        (folder / section / f"{section}-{record}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared dev sets not present at ../shared/evals-data")
def test_ccks_raw_rebuilds_the_shared_ccks_documents(tmp_path):
    from evals.loaders import load_ccks_raw

    lines = (SHARED / "ccks2017_cner.dev.jsonl").read_text(encoding="utf-8").splitlines()
    for n, want in enumerate(json.loads(line) for line in lines[:2]):
        folder = tmp_path / f"train-{n}"
        folder.mkdir()
        ccks_raw_from_shared(want, folder)
        [data] = load_paths([folder])  # found by its shape
        assert sum(len(d.gold) for d in data.docs) == len(want["gold"]) and not data.warnings
        [data] = load_ccks_raw(folder, min_chars=10**9)
        [got] = data.docs
        assert got.text == want["text"] and got.lang == "zh" and got.domain == "medical"
        assert [(g.start, g.end) for g in got.gold] == [(g["start"], g["end"]) for g in want["gold"]]
        assert sorted((g.start, g.end, g.quote, g.kind, g.label) for g in got.gold) == sorted(
            (g["start"], g["end"], g["quote"], g["kind"], g["label"]) for g in want["gold"])
    bad = tmp_path / "bad" / "一般项目"
    bad.mkdir(parents=True)
    (bad / "一般项目-1.txtoriginal.txt").write_text("患者腹痛三天。", encoding="utf-8")
    (bad / "一般项目-1.txt").write_text("腹痛\t2\t3\t症状和体征\n腹痛 two\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"一般项目-1\.txt:2: expected"):
        load_ccks_raw(tmp_path / "bad")
