"""CCKS 2017 CNER as distributed: <section>/<section>-<n>.txtoriginal.txt + <section>-<n>.txt."""

from __future__ import annotations

import re
from pathlib import Path

from evals.loaders.base import DataError, RecordJoiner, set_name
from evals.schema import DataSet, Gold

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
    joined = RecordJoiner(path, min_chars, domain="medical", lang="zh",
                          source=f"CCKS 2017 CNER raw ({path.name}), records")
    warnings: list[str] = []
    for number in sorted(records):
        files = records[number]
        order = [s for s in CCKS_SECTIONS if s in files] + sorted(set(files) - set(CCKS_SECTIONS))
        joined.begin(str(number), f"〔病历 {number}〕")
        for section in order:
            body = files[section].read_text(encoding="utf-8-sig").rstrip("\r\n")
            joined.add(f"\n【{section}】\n")
            joined.gold += _ccks_annotations(files[section], body, joined.add(body), warnings)
        joined.end()
    joined.flush()
    return [DataSet(set_name(path), str(path), joined.docs, warnings)]


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
