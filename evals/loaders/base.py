"""What every loader shares: the error type, set names, language guess."""

from __future__ import annotations

from pathlib import Path

from catp.errors import CatpError
from evals.schema import EvalDoc


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


class RecordJoiner:
    """Short records of a corpus joined in order into documents of at least `min_chars`: each
    record opens with its header (a blank line before it), then adds its texts and their gold."""

    def __init__(self, path: Path, min_chars: int, *, domain: str, source: str, lang: str | None = None) -> None:
        self.path, self.min_chars = path, min_chars
        self.domain, self.source, self.lang = domain, source, lang  # lang None: guessed from the text
        self.docs: list[EvalDoc] = []
        self.text, self.gold, self.records = "", [], []

    def begin(self, record: str, header: str) -> None:
        self.text += ("\n\n" if self.text else "") + header
        self.records.append(record)

    def add(self, piece: str) -> int:
        """Append `piece`; its offset in the document (for its gold)."""
        start = len(self.text)
        self.text += piece
        return start

    def end(self) -> None:
        """The record is complete: the document is too once it is long enough."""
        if len(self.text) >= self.min_chars:
            self.flush()

    def flush(self) -> None:
        if self.text:
            self.docs.append(EvalDoc(
                id=f"{set_name(self.path)}-{len(self.docs) + 1:03d}", domain=self.domain,
                lang=self.lang or guess_lang(self.text), text=self.text,
                gold=sorted(self.gold, key=lambda g: (g.start, g.end)),
                source=f"{self.source} {self.records[0]}-{self.records[-1]}"))
        self.text, self.gold, self.records = "", [], []

