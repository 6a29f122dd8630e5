"""SEC 8-K current reports (with their Exhibit 99 press releases) of the Lee, Surdeanu, MacCartney & Jurafsky
(LREC 2014) S&P 500 8-K corpus, as committed per ticker (gzip) in nelson-yao/MIDS-W266-Final-MSY
(data/8K-data/8K-raw/<TICKER>.gz).

Each file is a gzip of consecutive ``<DOCUMENT> ... </DOCUMENT>`` blocks, each starting with
``FILE:<TICKER>/<TICKER>-8K-<timestamp>.txt.gz``, ``TIME:``, ``EVENTS:`` and ``TEXT:`` lines. One block is one
document: the key is the FILE name without ``.txt.gz`` (e.g. ``AAN-8K-20030408161144``), the text is the block's
own content between the tags, unchanged except for the surrounding newlines.
"""

from __future__ import annotations

import gzip
import re

from train.sources import extractor

_BLOCK = re.compile(r"<DOCUMENT>\n(.*?)\n</DOCUMENT>", re.DOTALL)
_FILE = re.compile(r"^FILE:(?:[^/\n]*/)?([^\n]+?)(?:\.txt)?(?:\.gz)?$", re.MULTILINE)


@extractor("lee2014_8k")
def lee2014_8k(data: bytes) -> dict[str, str]:
    raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    out: dict[str, str] = {}
    for number, match in enumerate(_BLOCK.finditer(text), 1):
        body = match.group(1).strip("\n")
        name = _FILE.search(body)
        key = name.group(1) if name else f"doc{number:04d}"
        if key in out:
            key = f"{key}#{number}"
        out[key] = body
    return out
