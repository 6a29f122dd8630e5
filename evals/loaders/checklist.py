"""Key-fact checklists: one JSON line per document, `facts: [{quote, kind, why}]`.

The document is given inline (`text`) or by reference: `file` (a text file, or a JSONL data set with `doc`
naming the document's id), read at load time and resolved against the checklist file's folder. Each fact
becomes a gold item at its quote's first occurrence (after `after`, when given), found ignoring whitespace
differences; a quote that does not occur is an error naming the line. See evals/checklists/README.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from evals.loaders.base import DataError, guess_lang, head_of, set_name
from evals.locate import WhitespaceIndex
from evals.schema import DataSet, EvalDoc, Gold

# The shared vocabulary of fact kinds (per-kind shares are only comparable when documents share it).
FACT_KINDS = frozenset({
    # contracts
    "party", "date", "term", "fee", "payment", "liability", "indemnity", "termination", "exclusivity",
    "assignment", "governing_law", "dispute", "obligation",
    # reports
    "figure", "change", "guidance", "dividend", "one_off",
    # clinical records
    "demographic", "complaint", "finding", "test", "diagnosis", "procedure", "drug", "discharge",
    # judgments
    "cause", "fact", "holding", "judgment_amount", "statute",
})


class Fact(BaseModel):
    quote: str = Field(min_length=1)
    kind: str
    why: str = Field(min_length=1)
    after: str | None = None  # the quote's first occurrence after this text (for short quotes that repeat)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in FACT_KINDS:
            raise ValueError(f"unknown kind {kind!r}; use one of {', '.join(sorted(FACT_KINDS))}")
        return kind


class ChecklistEntry(BaseModel):
    id: str
    domain: str | None = None
    lang: str | None = None
    source: str = ""
    text: str | None = None
    file: str | None = None
    doc: str | None = None  # the document's id inside `file` when it is a JSONL data set
    facts: list[Fact] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_document(self) -> "ChecklistEntry":
        if (self.text is None) == (self.file is None):
            raise ValueError("give the document as `text` or as `file` (one of them)")
        if self.doc is not None and self.file is None:
            raise ValueError("`doc` names a document inside `file`")
        return self


def is_checklist(path: Path) -> bool:
    """A .jsonl file whose first record has `facts`."""
    if not (path.is_file() and path.suffix == ".jsonl"):
        return False
    first = next((line for line in head_of(path, 200_000).splitlines() if line.strip()), "")
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        return path.name.endswith(".checklist.jsonl")
    return isinstance(record, dict) and "facts" in record


def load_checklists(path: Path) -> list[DataSet]:
    docs, seen = [], set()
    datasets: dict[Path, dict[str, dict]] = {}
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                entry = ChecklistEntry.model_validate(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: not JSON ({exc.msg})") from exc
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = ".".join(str(p) for p in first["loc"])
                raise DataError(f"{where}: {loc + ': ' if loc else ''}{first['msg'].removeprefix('Value error, ')}") from exc
            if entry.id in seen:
                raise DataError(f"{where}: duplicate id {entry.id!r}")
            seen.add(entry.id)
            docs.append(_build(entry, path, where, datasets))
    return [DataSet(set_name(path).removesuffix(".checklist"), str(path), docs, kind="checklist")]


def _build(entry: ChecklistEntry, path: Path, where: str, datasets: dict) -> EvalDoc:
    text, domain, lang, source = _document(entry, path, where, datasets)
    index = WhitespaceIndex(text)
    gold = []
    for i, fact in enumerate(entry.facts):
        start = 0
        if fact.after is not None:
            anchor = index.find(fact.after)
            if anchor is None:
                raise DataError(f"{where}: facts[{i}] ({fact.kind}): its `after` text {fact.after!r} is not in "
                                f"document {entry.id!r}")
            start = anchor[1]
        found = index.find(fact.quote, start)
        if found is None:
            raise DataError(f"{where}: facts[{i}] ({fact.kind}): quote {fact.quote!r} is not in document {entry.id!r}")
        s, e = found
        gold.append(Gold(start=s, end=e, quote=text[s:e], kind=fact.kind, label="", why=fact.why))
    return EvalDoc(id=entry.id, domain=domain, lang=lang, source=source, text=text, gold=gold)


def _document(entry: ChecklistEntry, path: Path, where: str, datasets: dict) -> tuple[str, str, str, str]:
    """(text, domain, lang, source) of the entry's document."""
    if entry.text is not None:
        text, source = entry.text, entry.source or "inline"
        domain, lang = entry.domain, entry.lang
    else:
        target = (path.parent / entry.file).resolve()
        if not target.is_file():
            raise DataError(f"{where}: document file {entry.file} not found (looked at {target})")
        if entry.doc is None:
            text = target.read_text(encoding="utf-8")
            domain, lang, source = entry.domain, entry.lang, entry.source or entry.file
        else:
            if target not in datasets:
                datasets[target] = _index_jsonl(target)
            record = datasets[target].get(entry.doc)
            if record is None:
                raise DataError(f"{where}: no document {entry.doc!r} in {entry.file}")
            text = record.get("text", "")
            domain, lang = entry.domain or record.get("domain"), entry.lang or record.get("lang")
            source = entry.source or f"{entry.file} {entry.doc} ({record.get('source', '')})"
    if not text.strip():
        raise DataError(f"{where}: the document of {entry.id!r} is empty")
    return text, domain or "general", lang or guess_lang(text), source


def _index_jsonl(target: Path) -> dict[str, dict]:
    records = {}
    with open(target, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"{target}:{line_no}: not JSON ({exc.msg})") from exc
                records[record.get("id")] = record
    return records
