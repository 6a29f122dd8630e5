"""What every loader shares: the error type, set names, language guess."""

from __future__ import annotations

from pathlib import Path

from catp.errors import CatpError


class DataError(CatpError):
    """The data cannot be read; the message names the file (and line)."""


def head_of(path: Path | None, chars: int = 4000) -> str:
    """The first characters of a text file ('' when there is none): enough to recognise a format."""
    if path is None or not path.is_file():
        return ""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read(chars)


def set_name(path: Path) -> str:
    name = path.name
    for suffix in (".jsonl", ".json", ".csv"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".dev").removesuffix(".test") or path.name


def guess_lang(text: str) -> str:
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return "zh" if cjk * 4 > len(text.strip() or "x") else "en"
