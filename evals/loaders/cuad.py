"""CUAD v1 as distributed: master_clauses.csv + full_contract_txt/."""

from __future__ import annotations

import ast
import csv
import re
from pathlib import Path

from evals.loaders.base import DataError, set_name
from evals.locate import WhitespaceIndex
from evals.schema import DataSet, EvalDoc, Gold, Question

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
            stem = re.sub(r"\.pdf$", "", row[0].strip(), flags=re.IGNORECASE).lower()
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
