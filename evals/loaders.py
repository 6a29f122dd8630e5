"""Read eval data: the shared JSONL format, and raw public formats converted on the fly.

Add a format by writing `detect(path) -> bool` and `load(path, **opts) -> list[DataSet]`
and appending them to `LOADERS` (see docs/evals.md).
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from catp.errors import CatpError
from evals.locate import WhitespaceIndex
from evals.schema import DataSet, EvalDoc, Gold, Question


class DataError(CatpError):
    """The data cannot be read; the message names the file (and line)."""


def set_name(path: Path) -> str:
    name = path.name
    for suffix in (".jsonl", ".json", ".csv"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".dev").removesuffix(".test") or path.name


# -- shared JSONL ------------------------------------------------------------------------

def load_jsonl(path: Path) -> list[DataSet]:
    docs = []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                docs.append(EvalDoc.model_validate(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{line_no}: not JSON ({exc.msg})") from exc
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                message = first["msg"].removeprefix("Value error, ")
                raise DataError(f"{path}:{line_no}: {where + ': ' if where else ''}{message}") from exc
    return [DataSet(set_name(path), str(path), docs)]


# -- CUAD v1 as distributed: master_clauses.csv + full_contract_txt/ --------------------

CUAD_KINDS = {
    "Parties": "entity",
    "Agreement Date": "date", "Effective Date": "date", "Expiration Date": "date",
    "Renewal Term": "date", "Notice Period To Terminate Renewal": "date", "Warranty Duration": "date",
    "Cap On Liability": "amount", "Liquidated Damages": "amount", "Minimum Commitment": "amount",
    "Revenue/Profit Sharing": "amount",
}
CUAD_QUESTIONS = ("Agreement Date", "Effective Date", "Expiration Date", "Renewal Term",
                  "Notice Period To Terminate Renewal")
OMITTED = "<omitted>"


def is_cuad_raw(path: Path) -> bool:
    return path.is_dir() and (path / "master_clauses.csv").is_file()


def _cuad_cell(value: str, where: str) -> list[str]:
    value = (value or "").strip()
    if not value:
        return []
    try:
        items = ast.literal_eval(value)
    except (ValueError, SyntaxError) as exc:
        raise DataError(f"{where}: not a list of excerpts: {value[:60]!r}") from exc
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise DataError(f"{where}: not a list of excerpts: {value[:60]!r}")
    return items


def _contract_files(root: Path) -> dict[str, Path]:
    folder = root / "full_contract_txt"
    if not folder.is_dir():
        raise DataError(f"{root}: has master_clauses.csv but no full_contract_txt/ folder")
    return {p.stem.lower(): p for p in folder.rglob("*.txt")}


def load_cuad_raw(path: Path) -> list[DataSet]:
    csv.field_size_limit(1 << 30)
    files = _contract_files(path)
    csv_path = path / "master_clauses.csv"
    docs, warnings, missing = [], [], 0
    with open(csv_path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header or header[0].strip() != "Filename":
            raise DataError(f"{csv_path}: first column must be 'Filename'")
        answers = {_answer_category(h): i for i, h in enumerate(header) if _answer_category(h)}
        categories = [(i, h.strip()) for i, h in enumerate(header[1:], 1) if not _answer_category(h)]
        for row_no, row in enumerate(reader, 2):
            if not row or not row[0].strip():
                continue
            stem = re.sub(r"\.pdf$", "", row[0].strip(), flags=re.I).lower()
            txt = files.get(stem)
            if txt is None:
                warnings.append(f"{csv_path}:{row_no}: no text file for {row[0]!r}")
                continue
            text = txt.read_text(encoding="utf-8", errors="replace")
            doc, lost = _cuad_doc(text, txt.stem, row, categories, answers, f"{csv_path}:{row_no}")
            missing += lost
            docs.append(doc)
    if missing:
        warnings.append(f"{csv_path}: {missing} excerpts (or parts) not found in their contract text")
    return [DataSet(set_name(path), str(path), docs, warnings)]


def _answer_category(header: str) -> str | None:
    """'Parties-Answer' and 'Notice Period To Terminate Renewal- Answer' -> the category."""
    m = re.fullmatch(r"(.*?)\s*-\s*Answer\s*", header)
    return m.group(1).strip() if m else None


def _cuad_doc(text, doc_id, row, categories, answers, where) -> tuple[EvalDoc, int]:
    index = WhitespaceIndex(text)
    gold: list[Gold] = []
    by_category: dict[str, list[int]] = {}
    lost = 0
    for col, category in categories:
        cell = row[col] if col < len(row) else ""
        for excerpt in _cuad_cell(cell, f"{where}: {category}"):
            cursor = 0
            for part in excerpt.split(OMITTED):  # '<omitted>' joins non-adjacent pieces
                if not part.strip():
                    continue
                found = index.find(part, cursor) or index.find(part)
                if found is None:
                    lost += 1
                    continue
                start, end = found
                cursor = end
                by_category.setdefault(category, []).append(len(gold))
                gold.append(Gold(start=start, end=end, quote=text[start:end],
                                 kind=CUAD_KINDS.get(category, "clause"), label=category))
    questions = []
    for category in CUAD_QUESTIONS:
        col = answers.get(category)
        answer = row[col].strip() if col is not None and col < len(row) else ""
        if answer and by_category.get(category):
            questions.append(Question(question=f"What is the {category} of this contract?", answer=answer,
                                      gold_index=by_category[category], support="any"))
    doc = EvalDoc(id=doc_id, domain="legal", lang="en", source="CUAD v1 raw (master_clauses.csv)",
                  text=text, gold=gold, questions=questions)
    return doc, lost


# -- TAT-QA raw json: [{table: {table: rows}, paragraphs: [...], questions: [...]}] ----------

def is_tatqa_raw(path: Path) -> bool:
    if not (path.is_file() and path.suffix == ".json"):
        return False
    with open(path, encoding="utf-8") as fh:
        head = fh.read(2000)
    return head.lstrip().startswith("[") and '"paragraphs"' in head and '"table"' in head


def load_tatqa_raw(path: Path, min_chars: int = 15_000) -> list[DataSet]:
    try:
        contexts = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg})") from exc
    docs, builder = [], _TatqaBuilder()
    for n, context in enumerate(contexts, 1):
        builder.add(context, n)
        if len(builder.text) >= min_chars:
            docs.append(builder.build(f"{set_name(path)}-{len(docs) + 1:03d}"))
            builder = _TatqaBuilder()
    if builder.text:
        docs.append(builder.build(f"{set_name(path)}-{len(docs) + 1:03d}"))
    return [DataSet(set_name(path), str(path), docs)]


class _TatqaBuilder:
    """Joins contexts: header line, table rows as 'a | b', then paragraphs."""

    def __init__(self) -> None:
        self.text, self.gold, self.questions = "", [], []

    def _append(self, piece: str) -> tuple[int, int]:
        start = len(self.text)
        self.text += piece + "\n"
        return start, start + len(piece)

    def add(self, context: dict, number: int) -> None:
        self._append(f"=== Excerpt {number} ===")
        base = len(self.text)
        rows = (context.get("table") or {}).get("table") or []
        for row in rows:
            self._append(" | ".join(str(c) for c in row))
        self._append("")
        paragraphs = {}
        for p in sorted(context.get("paragraphs", []), key=lambda p: p.get("order", 0)):
            start, end = self._append(p.get("text", ""))
            self._append("")
            paragraphs[str(p.get("order"))] = (start, end)
        context_text = self.text[base:]
        for q in context.get("questions", []):
            index = []
            for order in q.get("rel_paragraphs", []) or []:
                if str(order) in paragraphs and paragraphs[str(order)][1] > paragraphs[str(order)][0]:
                    start, end = paragraphs[str(order)]
                    index.append(self._gold(start, end, "evidence", "TAT-QA rel_paragraph"))
            answer = q.get("answer")
            spans = answer if isinstance(answer, list) else [answer]
            if q.get("answer_type") in ("span", "multi-span"):
                for span in spans:
                    found = _unique(context_text, str(span))
                    if found is not None:
                        index.append(self._gold(base + found, base + found + len(str(span)), "answer",
                                                f"TAT-QA answer ({q.get('answer_type')})"))
            for fact in q.get("facts", []) or []:
                found = _unique(context_text, str(fact))
                if found is not None:
                    index.append(self._gold(base + found, base + found + len(str(fact)), "number",
                                            f"TAT-QA fact ({q.get('answer_type')})"))
            if index:
                self.questions.append(Question(question=q.get("question", ""), answer=str(answer),
                                               gold_index=index, support="all"))

    def _gold(self, start: int, end: int, kind: str, label: str) -> int:
        self.gold.append(Gold(start=start, end=end, quote=self.text[start:end], kind=kind, label=label))
        return len(self.gold) - 1

    def build(self, doc_id: str) -> EvalDoc:
        return EvalDoc(id=doc_id, domain="finance", lang="en", source="TAT-QA raw json",
                       text=self.text, gold=self.gold, questions=self.questions)


def _unique(text: str, needle: str) -> int | None:
    if not needle.strip():
        return None
    first = text.find(needle)
    return first if first >= 0 and text.find(needle, first + 1) < 0 else None


# -- CAIL2019 reading comprehension (CJRC), SQuAD-style json: {data: [{paragraphs: [...]}]} ----

def is_cjrc_raw(path: Path) -> bool:
    if not (path.is_file() and path.suffix == ".json"):
        return False
    with open(path, encoding="utf-8") as fh:
        head = fh.read(4000)
    return head.lstrip().startswith("{") and '"paragraphs"' in head and '"qas"' in head


def load_cjrc_raw(path: Path, min_chars: int = 15_000) -> list[DataSet]:
    """Cases joined in file order (per `domain`: civil, criminal) into documents of at least
    `min_chars`, each case under a header line 【案件 N｜casename】. Every distinct span answer
    of a question is a gold item labelled with how many annotators gave it; YES/NO questions are
    kept without gold, unanswerable ones (`is_impossible`) are left out."""
    try:
        cases = json.loads(path.read_text(encoding="utf-8")).get("data")
    except (json.JSONDecodeError, AttributeError) as exc:
        raise DataError(f"{path}: not a CJRC/SQuAD json object with 'data'") from exc
    if not isinstance(cases, list):
        raise DataError(f"{path}: 'data' is not a list of cases")
    docs, warnings, builders = [], [], {}
    for n, case in enumerate(cases, 1):
        domain = str(case.get("domain", ""))
        builder = builders.setdefault(domain, _CjrcBuilder(domain))
        for paragraph in case.get("paragraphs", []):
            warnings += builder.add(paragraph, case.get("caseid", n), f"{path}: case {case.get('caseid', n)}")
        if len(builder.text) >= min_chars:
            docs.append(builder.build(f"{set_name(path)}-{len(docs) + 1:03d}"))
            builders[domain] = _CjrcBuilder(domain)
    docs += [b.build(f"{set_name(path)}-{len(docs) + i + 1:03d}") for i, b in enumerate(builders.values()) if b.text]
    return [DataSet(set_name(path), str(path), docs, warnings)]


class _CjrcBuilder:
    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.text, self.gold, self.questions, self.case_ids = "", [], [], []
        self.seen: dict[tuple[int, int], int] = {}

    def add(self, paragraph: dict, case_id, where: str) -> list[str]:
        context = paragraph.get("context", "")
        if self.text:
            self.text += "\n\n"
        self.text += f"【案件 {case_id}｜{paragraph.get('casename', '')}】\n"
        base = len(self.text)
        self.text += context
        self.case_ids.append(str(case_id))
        warnings = []
        for qa in paragraph.get("qas", []):
            if str(qa.get("is_impossible", "false")).lower() == "true":
                continue
            annotators = len(qa.get("answers", []))
            answers = [a for a in qa.get("answers", []) if str(a.get("text", "")).strip()]
            if not answers:
                continue
            spans: dict[tuple[int, int], int] = {}
            for a in answers:
                start, text = int(a.get("answer_start", -1)), str(a["text"])
                if start < 0:  # YES / NO
                    continue
                if context[start:start + len(text)] != text:
                    warnings.append(f"{where}: answer {text[:20]!r} is not at {start}")
                    continue
                spans[(start, start + len(text))] = spans.get((start, start + len(text)), 0) + 1
            index = []
            for (start, end), votes in spans.items():
                key = (base + start, base + end)
                if key not in self.seen:  # two questions answered by the same span share one gold item
                    self.seen[key] = len(self.gold)
                    self.gold.append(Gold(start=key[0], end=key[1], quote=context[start:end], kind="answer",
                                          label=f"CJRC span answer ({votes}/{annotators} annotators)"))
                index.append(self.seen[key])
            answer = Counter(str(a["text"]) for a in answers).most_common(1)[0][0]
            self.questions.append(Question(question=qa.get("question", ""), answer=answer, gold_index=index,
                                           support="any"))
        return warnings

    def build(self, doc_id: str) -> EvalDoc:
        cases = f"cases {self.case_ids[0]}-{self.case_ids[-1]}" if self.case_ids else "no cases"
        return EvalDoc(id=doc_id, domain="legal", lang="zh", text=self.text, gold=self.gold,
                       questions=self.questions,
                       source=f"CAIL2019 reading comprehension (CJRC) raw json, domain={self.domain}, {cases}")


# -- E3C as distributed: data_annotation/<Language>/layer1/*.xml (UIMA CAS XMI from WebAnno) ----

E3C_KINDS = {"CLINENTITY": "entity", "BODYPART": "entity", "RML": "number", "TIMEX3": "date"}


def is_e3c_xmi(path: Path) -> bool:
    if not path.is_dir():
        return False
    first = next(iter(sorted(path.glob("*.xml"))), None)
    if first is None:
        return False
    with open(first, encoding="utf-8", errors="replace") as fh:
        head = fh.read(4000).lower()
    return "xmi" in head and "sofa" in head


def load_e3c_xmi(path: Path, min_chars: int = 15_000) -> list[DataSet]:
    """Case reports in file-name order, joined into documents of at least `min_chars`, each
    under a header line `=== docName (docSource) ===`. Gold: clinical entities and body parts
    (entity), RML results and measurements (number), TIMEX3 by class (date)."""
    docs, text, gold, names = [], "", [], []

    def flush() -> None:
        nonlocal text, gold, names
        if text:
            docs.append(EvalDoc(id=f"{set_name(path)}-{len(docs) + 1:03d}", domain="medical", lang=_lang(text),
                                text=text, gold=sorted(gold, key=lambda g: (g.start, g.end)),
                                source=f"E3C XMI ({path.name}), documents {names[0]}-{names[-1]}"))
        text, gold, names = "", [], []

    for xml in sorted(path.glob("*.xml")):
        case_text, name, source, spans = _e3c_case(xml)
        if text:
            text += "\n\n"
        text += f"=== {name} ({source}) ===\n"
        base = len(text)
        text += case_text
        names.append(name)
        for begin, end, label in spans:
            if 0 <= begin < end <= len(case_text):
                kind = E3C_KINDS[label.split(":")[0]]
                gold.append(Gold(start=base + begin, end=base + end, quote=case_text[begin:end], kind=kind,
                                 label=label))
        if len(text) >= min_chars:
            flush()
    flush()
    return [DataSet(set_name(path), str(path), docs)]


def _e3c_case(xml: Path) -> tuple[str, str, str, list[tuple[int, int, str]]]:
    """(text, docName, docSource, [(begin, end, label)]) of one XMI file."""
    from xml.etree import ElementTree

    try:
        root = ElementTree.parse(xml).getroot()
    except ElementTree.ParseError as exc:
        raise DataError(f"{xml}: not XML ({exc})") from exc
    text, meta, spans = None, {}, []
    for el in root.iter():
        name = el.tag.rsplit("}", 1)[-1]
        if name == "Sofa":
            text = el.get("sofaString", "")
        elif name == "METADATA":
            meta = el.attrib
        elif name in E3C_KINDS and el.get("begin") is not None and el.get("end") is not None:
            label = f"TIMEX3:{el.get('timex3Class', '')}" if name == "TIMEX3" else name
            spans.append((int(el.get("begin")), int(el.get("end")), label))
    if text is None:
        raise DataError(f"{xml}: no cas:Sofa with the document text")
    return text, meta.get("docName", xml.stem), meta.get("docSource", ""), spans


# -- CCKS 2017 CNER as distributed: <section>/<section>-<n>.txtoriginal.txt + <section>-<n>.txt ----

CCKS_SECTIONS = ("一般项目", "病史特点", "诊疗经过", "出院情况")
_CCKS_FILE = re.compile(r"(.+)-(\d+)\.txtoriginal\.txt")


def is_ccks_raw(path: Path) -> bool:
    return path.is_dir() and next(path.rglob("*.txtoriginal.txt"), None) is not None


def load_ccks_raw(path: Path, min_chars: int = 15_000) -> list[DataSet]:
    """Patient records (a record = the files numbered n of the four sections) in number order,
    joined into documents of at least `min_chars`: `〔病历 n〕`, then each section under
    `【section】`. Annotation lines are `entity<TAB>start<TAB>end<TAB>label`, end inclusive."""
    records: dict[int, dict[str, Path]] = {}
    for original in path.rglob("*.txtoriginal.txt"):
        m = _CCKS_FILE.fullmatch(original.name)
        if m:
            records.setdefault(int(m.group(2)), {})[m.group(1)] = original
    docs, warnings, text, gold, numbers = [], [], "", [], []

    def flush() -> None:
        nonlocal text, gold, numbers
        if text:
            docs.append(EvalDoc(id=f"{set_name(path)}-{len(docs) + 1:03d}", domain="medical", lang="zh", text=text,
                                gold=sorted(gold, key=lambda g: (g.start, g.end)),
                                source=f"CCKS 2017 CNER raw ({path.name}), records {numbers[0]}-{numbers[-1]}"))
        text, gold, numbers = "", [], []

    for number in sorted(records):
        files = records[number]
        order = [s for s in CCKS_SECTIONS if s in files] + sorted(set(files) - set(CCKS_SECTIONS))
        text += ("\n\n" if text else "") + f"〔病历 {number}〕"
        numbers.append(number)
        for section in order:
            body = files[section].read_text(encoding="utf-8-sig").rstrip("\r\n")
            text += f"\n【{section}】\n"
            base = len(text)
            text += body
            gold += _ccks_annotations(files[section], body, base, warnings)
        if len(text) >= min_chars:
            flush()
    flush()
    return [DataSet(set_name(path), str(path), docs, warnings)]


def _ccks_annotations(original: Path, body: str, base: int, warnings: list[str]) -> list[Gold]:
    ann = original.with_name(original.name.replace(".txtoriginal.txt", ".txt"))
    if not ann.is_file():
        warnings.append(f"{original}: no annotation file {ann.name}")
        return []
    out = []
    for line_no, line in enumerate(ann.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.rsplit(None, 3)
        try:
            entity, start, end, label = parts[0], int(parts[1]), int(parts[2]) + 1, parts[3].strip()
        except (IndexError, ValueError):
            raise DataError(f"{ann}:{line_no}: expected 'entity<TAB>start<TAB>end<TAB>label'") from None
        if body[start:end].strip() != entity.strip():
            warnings.append(f"{ann}:{line_no}: {entity!r} is not at {start}-{end - 1}")
            continue
        out.append(Gold(start=base + start, end=base + end, quote=body[start:end], kind="entity", label=label))
    return out


# -- brat standoff (.txt + .ann), e.g. CCKS exports ----------------------------------------

def is_brat_dir(path: Path) -> bool:
    return path.is_dir() and any(path.glob("*.ann"))


def load_brat(path: Path, domain: str = "general") -> list[DataSet]:
    docs = []
    for ann in sorted(path.glob("*.ann")):
        txt = ann.with_suffix(".txt")
        if not txt.is_file():
            raise DataError(f"{ann}: no matching {txt.name}")
        text = txt.read_text(encoding="utf-8")
        gold = []
        for line_no, line in enumerate(ann.read_text(encoding="utf-8").splitlines(), 1):
            if not line.startswith("T"):
                continue
            try:
                _, middle, _ = line.split("\t", 2)
                label, ranges = middle.split(" ", 1)
                for piece in ranges.split(";"):
                    start, end = (int(x) for x in piece.split())
                    gold.append(Gold(start=start, end=end, quote=text[start:end], kind="entity", label=label))
            except ValueError as exc:
                raise DataError(f"{ann}:{line_no}: not a brat text-bound annotation") from exc
        docs.append(EvalDoc(id=ann.stem, domain=domain, lang=_lang(text), source=f"brat {ann.name}",
                            text=text, gold=gold))
    return [DataSet(path.name, str(path), docs)]


# -- character-per-line BIO (.bio): "字 B-LABEL", blank line ends a sentence ------------------

def load_bio(path: Path, domain: str = "general") -> list[DataSet]:
    text, gold, open_span = [], [], None
    pos = 0

    def close() -> None:
        nonlocal open_span
        if open_span:
            start, label = open_span
            gold.append((start, pos, label))
            open_span = None

    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            close()
            text.append("\n")
            pos += 1
            continue
        parts = line.split()
        char, tag = (parts[0], parts[-1]) if len(parts) >= 2 else (None, None)
        if char is None or len(char) != 1 or not re.fullmatch(r"O|[BIES]-.+", tag):
            raise DataError(f"{path}:{line_no}: expected 'char TAG' (BIO), got {line[:40]!r}")
        if tag == "O" or tag[0] in "BS" or (open_span and open_span[1] != tag[2:]):
            close()
        if tag != "O" and open_span is None:
            open_span = (pos, tag[2:])
        text.append(char)
        pos += 1
        if tag[0] in "ES":
            close()
    close()
    full = "".join(text)
    items = [Gold(start=s, end=e, quote=full[s:e], kind="entity", label=lab) for s, e, lab in gold]
    doc = EvalDoc(id=path.stem, domain=domain, lang=_lang(full), source=f"BIO {path.name}", text=full, gold=items)
    return [DataSet(set_name(path), str(path), [doc])]


def _lang(text: str) -> str:
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return "zh" if cjk * 4 > len(text.strip() or "x") else "en"


# -- discovery ------------------------------------------------------------------------------

Loader = tuple[str, Callable[[Path], bool], Callable[..., list[DataSet]]]
LOADERS: list[Loader] = [
    ("cuad-raw", is_cuad_raw, load_cuad_raw),
    ("jsonl", lambda p: p.is_file() and p.suffix == ".jsonl", load_jsonl),
    ("tatqa-raw", is_tatqa_raw, load_tatqa_raw),
    ("cjrc-raw", is_cjrc_raw, load_cjrc_raw),
    ("e3c-xmi", is_e3c_xmi, load_e3c_xmi),
    ("ccks-raw", is_ccks_raw, load_ccks_raw),
    ("brat", is_brat_dir, load_brat),
    ("bio", lambda p: p.is_file() and p.suffix == ".bio", load_bio),
]


def load_paths(paths: list[Path], *, domain: str | None = None) -> list[DataSet]:
    """Every data set under the given files and folders, in a stable order."""
    sets: list[DataSet] = []
    for path in paths:
        if not path.exists():
            raise DataError(f"{path}: no such file or folder")
        found = _load_one(path, domain)
        if found is None and path.is_dir():
            found = [s for child in sorted(path.iterdir()) for s in (_load_one(child, domain) or [])]
        if not found:
            raise DataError(f"{path}: no eval data found (expected .jsonl, a CUAD folder with "
                            "master_clauses.csv, TAT-QA or CAIL2019/CJRC .json, E3C .xml, CCKS .txtoriginal.txt, brat .ann/.txt or .bio)")
        sets.extend(found)
    names: dict[str, int] = {}
    for s in sets:  # two sets of the same name stay apart
        names[s.name] = names.get(s.name, 0) + 1
        if names[s.name] > 1:
            s.name = f"{s.name}#{names[s.name]}"
    return sets


def _load_one(path: Path, domain: str | None) -> list[DataSet] | None:
    for _, detect, load in LOADERS:
        if detect(path):
            sets = load(path, domain=domain) if load in (load_brat, load_bio) and domain else load(path)
            return sets
    return None
