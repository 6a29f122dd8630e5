"""Reading labelled training documents: label records, their sources, and texts rebuilt from snapshots."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from evals.loaders.checklist import Fact

TRAIN_DIR = Path(__file__).resolve().parent
LABELS_DIR = TRAIN_DIR / "labels"
TEXTS = TRAIN_DIR / "data" / "texts.jsonl"  # rebuilt by train.fetch, never committed
MANIFEST = TRAIN_DIR / "manifest.jsonl"  # every training document: source, path, split, sha256 (train.fetch)
MIRROR = Path("/work/.mirror")

GENRES = ("contract", "judgment", "annual_report", "announcement", "clinical_record", "case_report")


# Which corpus a training document belongs to, from its extractor's name: leave-one-corpus-out drops one. The
# eval sets come from the first four (../shared/evals-data/README.md); CUAD is never trained on.
CORPORA = {"cail2019": r"cail", "ccks": r"ccks", "tatqa": r"tat_?qa", "e3c": r"e3c"}
EVAL_CORPORA = frozenset(CORPORA)


class Source(BaseModel, extra="forbid"):
    repo: str  # owner/name on GitHub
    commit: str = Field(min_length=40, max_length=40)
    path: str  # the file inside the repository
    split: str  # the corpus's own split (train, test, layer2, ...)
    extractor: str  # a name registered in train/sources
    key: str  # the document's key in the extractor's output


class KeepFact(Fact, extra="forbid"):
    """A checklist fact (quote, kind from FACT_KINDS, why) with the expert's tier."""

    tier: Literal["must", "should"]


class LabelRecord(BaseModel, extra="forbid"):
    id: str
    domain: Literal["legal", "finance", "medical"]
    lang: Literal["zh", "en"]
    genre: Literal[GENRES]  # type: ignore[valid-type]
    source: Source
    licence: str
    sha256: str = Field(min_length=64, max_length=64)
    chars: int
    facts: list[KeepFact] = Field(min_length=1)


def corpus_of(record: LabelRecord) -> str:
    for corpus, pattern in CORPORA.items():
        if re.search(pattern, record.source.extractor, re.I):
            return corpus
    return record.source.extractor


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_labels(paths: Iterable[Path] | None = None) -> list[LabelRecord]:
    """Every label record of the given files (default: train/labels/*.jsonl), errors naming file and line."""
    records = []
    for path in sorted(paths) if paths is not None else sorted(LABELS_DIR.glob("*.jsonl")):
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(LabelRecord.model_validate_json(line))
            except ValueError as error:
                raise SystemExit(f"{path}:{number}: {error}") from None
    return records


def git_dir(repo: str, mirror: Path = MIRROR) -> Path:
    return mirror / repo.replace("/", "+") / "repo"


def read_blob(repo: str, commit: str, path: str, mirror: Path = MIRROR) -> bytes:
    where = git_dir(repo, mirror)
    if not where.is_dir():
        raise SystemExit(f"{repo}: no snapshot at {where}; fetch github:{repo} first")
    done = subprocess.run(["git", "--git-dir", str(where), "show", f"{commit}:{path}"], capture_output=True)
    if done.returncode:
        raise SystemExit(f"{repo}@{commit[:10]}:{path}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def head_commit(repo: str, mirror: Path = MIRROR) -> str:
    out = subprocess.run(["git", "--git-dir", str(git_dir(repo, mirror)), "rev-parse", "HEAD"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def extract(repo: str, commit: str, path: str, extractor: str, mirror: Path = MIRROR) -> dict[str, str]:
    from train.sources import load_all

    extractors = load_all()
    if extractor not in extractors:
        raise SystemExit(f"unknown extractor {extractor!r}; known: {', '.join(sorted(extractors))}")
    return extractors[extractor](read_blob(repo, commit, path, mirror))


def rebuild(records: list[LabelRecord], mirror: Path = MIRROR) -> Iterator[tuple[LabelRecord, str]]:
    """Each record with its text, read once per source file; a text whose sha256 differs is an error."""
    by_file: dict[tuple[str, str, str, str], list[LabelRecord]] = {}
    for record in records:
        s = record.source
        by_file.setdefault((s.repo, s.commit, s.path, s.extractor), []).append(record)
    for (repo, commit, path, name), group in by_file.items():
        texts = extract(repo, commit, path, name, mirror)
        for record in group:
            text = texts.get(record.source.key)
            if text is None:
                raise SystemExit(f"{record.id}: key {record.source.key!r} not in {repo}:{path} ({name})")
            if sha256(text) != record.sha256:
                raise SystemExit(f"{record.id}: sha256 of the rebuilt text differs from the manifest's")
            yield record, text


def load_texts(path: Path = TEXTS) -> dict[str, str]:
    """The texts train.fetch wrote, by record id."""
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run python -m train.fetch first")
    return {row["id"]: row["text"] for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def manifest_rows(records: list[LabelRecord]) -> list[dict]:
    """One row per training document, in id order: where it comes from and the sha256 of its text."""
    return [{"id": r.id, "domain": r.domain, "lang": r.lang, "genre": r.genre, "repo": r.source.repo,
             "commit": r.source.commit, "path": r.source.path, "split": r.source.split,
             "extractor": r.source.extractor, "key": r.source.key, "sha256": r.sha256, "chars": r.chars,
             "licence": r.licence} for r in sorted(records, key=lambda r: r.id)]


def write_manifest(records: list[LabelRecord], path: Path = MANIFEST) -> None:
    rows = manifest_rows(records)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
