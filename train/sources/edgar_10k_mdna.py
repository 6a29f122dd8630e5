"""10-K MD&A (Item 7) text from EDGAR-CRAWLER's extracted-filings test fixtures.

Source: nlpaueb/edgar-crawler, tests/fixtures/EXTRACTED_FILINGS/10-K.zip: one JSON per SEC 10-K filing, with the
filing's items as text (item_7 = Management's Discussion and Analysis). An MD&A is usually 20,000-130,000
characters, so each one is cut, at line boundaries and in order, into consecutive parts of at most about 6,500
characters (a last part under 2,000 characters is joined to the one before). Each part starts with one header
line naming the company, the period and the part; the filing's own text is kept as it is.

Key: "<filing file name without .json>/p<N>".
"""

from __future__ import annotations

import io
import json
import zipfile

from train.sources import extractor

MAX_PART = 6500
MIN_LAST = 2000
MIN_MDNA = 1500


def _parts(text: str) -> list[str]:
    parts: list[list[str]] = [[]]
    size = 0
    for line in text.split("\n"):
        if parts[-1] and size + len(line) + 1 > MAX_PART:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line) + 1
    chunks = ["\n".join(p).strip("\n") for p in parts]
    if len(chunks) > 1 and len(chunks[-1]) < MIN_LAST:
        chunks[-2] = chunks[-2] + "\n" + chunks[-1]
        chunks.pop()
    return [c for c in chunks if c.strip()]


@extractor("edgar_10k_mdna_parts")
def edgar_10k_mdna_parts(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in sorted(archive.namelist()):
            if not name.endswith(".json"):
                continue
            filing = json.loads(archive.read(name).decode("utf-8"))
            mdna = filing.get("item_7") or ""
            if len(mdna) < MIN_MDNA:
                continue
            chunks = _parts(mdna)
            stem = name.rsplit("/", 1)[-1][: -len(".json")]
            for number, chunk in enumerate(chunks, 1):
                header = (
                    f"=== {filing.get('company', '')}, Form {filing.get('filing_type', '')} for the period ended "
                    f"{filing.get('period_of_report', '')}, Item 7 (part {number} of {len(chunks)}) ==="
                )
                out[f"{stem}/p{number}"] = header + "\n" + chunk
    return out
