"""Check label files before training on them.

    python -m train.check [FILE ...]      # default: every train/labels/*.jsonl

For each record: the text rebuilds with its sha256, every quote occurs in it exactly, and the quotes together
stay near the 1/6 budget an expert keeps to. For all records together: no text is used twice, none comes from a
forbidden source, and none is (or holds) an eval document (../shared/evals-data, evals/checklists and examples/).
A document of a corpus that an eval set comes from (CAIL2019, CCKS, E3C, TAT-QA: train.corpus.EVAL_CORPORA) may
share no 64-character passage with any eval document. Any other may share stock wording (a governing-law
sentence, a line of dashes) but not SHARED_RUN characters in a row, nor SHARED_SHARE of its text, with one.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from train.corpus import EVAL_CORPORA, MIRROR, LabelRecord, corpus_of, read_labels, rebuild

ROOT = Path(__file__).resolve().parent.parent
EVAL_DATA = ROOT.parent / "shared" / "evals-data"
# Never trained on (DEVELOPERS.md, issue 31): CUAD outside the eval data, BBT-FinCUGE's FinQA and DuEE-fin, TD2000.
FORBIDDEN = re.compile(r"cuad|fincuge|duee|td2000", re.I)
WINDOW, STRIDE = 64, 32  # any shared run of WINDOW + STRIDE characters holds a sampled window
SHARED_RUN, SHARED_SHARE = 500, 0.2  # with one eval document, for corpora no eval set comes from
MIN_DISTINCT = 8  # a window of fewer distinct characters (a divider line) is not evidence
MAX_QUOTED_SHARE = 0.34  # quotes over a third of the text are not a 1/6 keep-list


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def eval_texts() -> list[tuple[str, str]]:
    """(name, text) of every document the evals read."""
    found = []
    for path in sorted(EVAL_DATA.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            found.append((row["id"], row["text"]))
    for path in sorted((ROOT / "examples").glob("*.txt")) + sorted((ROOT / "evals/checklists/texts").glob("*")):
        found.append((path.name, path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "evals/checklists").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("text"):
                found.append((row["id"], row["text"]))
    return found


def eval_windows() -> dict[int, str]:
    windows: dict[int, str] = {}
    for name, text in eval_texts():
        flat = squeeze(text)
        for start in range(0, max(len(flat) - WINDOW, 0) + 1, STRIDE):
            windows.setdefault(hash(flat[start:start + WINDOW]), name)
    return windows


def shared_passage(text: str, windows: dict[int, str], strict: bool = True) -> str | None:
    """What the text shares with an eval document, when it is too much. Strict (a document of a corpus an eval
    set comes from): any shared window. Otherwise, with one eval document, a stretch of SHARED_RUN characters or
    SHARED_SHARE of the text: stock wording ("governed by and construed in accordance with") is allowed.
    Eval windows are sampled every STRIDE characters, so a shared stretch shows a hit every STRIDE positions."""
    flat = squeeze(text)
    count = max(len(flat) - WINDOW + 1, 1)
    hits: dict[str, int] = {}
    runs: dict[str, tuple[int, int, int]] = {}  # name -> (first, last, longest) of its current stretch
    for start in range(count):
        piece = flat[start:start + WINDOW]
        name = windows.get(hash(piece)) if len(set(piece)) >= MIN_DISTINCT else None
        if name is None:
            continue
        if strict:
            return f"{name}: shares {piece!r}"
        hits[name] = hits.get(name, 0) + 1
        first, last, longest = runs.get(name, (start, -STRIDE - 1, 0))
        if start - last > STRIDE:
            first = start
        runs[name] = (first, start, max(longest, start - first + WINDOW))
        if runs[name][2] >= SHARED_RUN or hits[name] * STRIDE >= SHARED_SHARE * count:
            return (f"{name}: {runs[name][2]} characters shared in a row, about {hits[name] * STRIDE} in all, "
                    f"from {flat[first:first + 60]!r}")
    return None


def problems(record: LabelRecord, text: str) -> list[str]:
    found = []
    if FORBIDDEN.search(record.source.repo) or FORBIDDEN.search(record.source.path):
        found.append(f"forbidden source {record.source.repo}:{record.source.path}")
    if record.chars != len(text):
        found.append(f"chars {record.chars} but the text has {len(text)}")
    for fact in record.facts:
        if fact.quote not in text:
            found.append(f"quote not in the text: {fact.quote[:80]!r}")
    quoted = sum(len(squeeze(f.quote)) for f in record.facts)
    if quoted > MAX_QUOTED_SHARE * len(squeeze(text)):
        found.append(f"quotes hold {quoted} of {len(squeeze(text))} characters: keep about 1/6")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.check", description=__doc__.splitlines()[0])
    parser.add_argument("labels", nargs="*", type=Path)
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--no-hygiene", action="store_true", help="skip the eval-overlap scan (faster)")
    args = parser.parse_args(argv)
    records = read_labels(args.labels or None)
    windows = {} if args.no_hygiene else eval_windows()
    seen: dict[str, str] = {}
    bad = 0
    for record, text in rebuild(records, args.mirror):
        found = problems(record, text)
        if record.sha256 in seen:
            found.append(f"same text as {seen[record.sha256]}")
        seen.setdefault(record.sha256, record.id)
        overlap = windows and shared_passage(text, windows, strict=corpus_of(record) in EVAL_CORPORA)
        if overlap:
            found.append(f"shares a passage with eval document {overlap}")
        for problem in found:
            print(f"{record.id}: {problem}")
        bad += bool(found)
    ids = [r.id for r in records]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        print(f"{dup}: id used twice")
        bad += 1
    print(f"{len(records)} records, {bad} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
