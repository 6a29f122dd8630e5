"""Generic annotation files: brat standoff folders (.txt + .ann) and character-per-line BIO (.bio)."""

from __future__ import annotations

import re
from pathlib import Path

from evals.loaders.base import DataError, guess_lang, set_name
from evals.schema import DataSet, EvalDoc, Gold


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
        docs.append(EvalDoc(id=ann.stem, domain=domain, lang=guess_lang(text), source=f"brat {ann.name}",
                            text=text, gold=gold))
    return [DataSet(path.name, str(path), docs)]


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
    doc = EvalDoc(id=path.stem, domain=domain, lang=guess_lang(full), source=f"BIO {path.name}", text=full, gold=items)
    return [DataSet(set_name(path), str(path), [doc])]
