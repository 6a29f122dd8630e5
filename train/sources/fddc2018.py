"""FDDC 2018 (Tianchi, A-share announcement information extraction): one announcement per HTML file.

The competition HTML marks each paragraph as <div type="content"> and keeps tables as <table>. The extractor
only decodes it to text: one line per paragraph div or table row (cells joined by " | "), entities unescaped,
whitespace runs inside a line collapsed to one space, empty lines dropped. Key: "doc" (one announcement per file).
"""

from __future__ import annotations

import html
import re

from train.sources import extractor

_BLOCK = re.compile(r'<div type="content">(.*?)</div>|<tr[^>]*>(.*?)</tr>', re.S | re.I)
_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


def _clean(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub(" ", fragment))).strip()


@extractor("fddc2018_html")
def fddc2018_html(data: bytes) -> dict[str, str]:
    source = data.decode("utf-8", errors="replace")
    lines = []
    for para, row in _BLOCK.findall(source):
        if row:
            line = " | ".join(_clean(cell) for cell in _CELL.findall(row))
            if not line.replace("|", "").strip():
                line = ""
        else:
            line = _clean(para)
        if line:
            lines.append(line)
    return {"doc": "\n".join(lines)} if lines else {}
