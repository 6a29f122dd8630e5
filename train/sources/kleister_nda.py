"""Kleister NDA (applicaai/kleister-nda): SEC EDGAR non-disclosure agreements and related exhibits.

Each `in.tsv.xz` row is one document: file name, keys, then four text layers of the same PDF
(pdf2djvu, tesseract, textract, best). We take the pdf2djvu/djvu2hocr layer (column 3) and undo the
corpus's escapes (\\n end of line, \\f page break, \\t tab, \\\\ backslash); nothing else is changed.
Key: the document's file name without ".pdf" (the MD5 of the PDF).
"""

from __future__ import annotations

import lzma
import re

from train.sources import extractor

_ESCAPES = {"n": "\n", "f": "\f", "t": "\t", "\\": "\\"}


def _unescape(text: str) -> str:
    return re.sub(r"\\([nft\\])", lambda m: _ESCAPES[m.group(1)], text)


@extractor("kleister_nda_djvu")
def kleister_nda_djvu(data: bytes) -> dict[str, str]:
    raw = lzma.decompress(data) if data[:6] == b"\xfd7zXZ\x00" else data
    out: dict[str, str] = {}
    for line in raw.decode("utf-8").split("\n"):
        if not line.strip():
            continue
        cols = line.split("\t")
        key = cols[0].removesuffix(".pdf")
        out[key] = _unescape(cols[2])
    return out
