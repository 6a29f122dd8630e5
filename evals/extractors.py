"""An independent check: numbers, dates and money found by third-party extractors that
catp itself does not use, so that the check does not share catp's blind spots.

- en: Recognizers-Text (Microsoft) number and currency models (the latter only on text chunks
  holding a currency sign or word, for speed); dates from datefinder, plus dateparser's
  search_dates matches that datefinder missed (strict parsing, and only matches that hold a
  year or a d/m/y form: its search also returns words like "may" and bare numbers).
- zh: JioNLP extract_money and extract_time; Recognizers-Text's Chinese number model.
Only values whose text holds a digit count (bare "one" / "一" are everywhere).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

CHUNK_CHARS = 5000
REVISION = 4  # bump when the filtering here changes: it is part of the cache key
_DIGIT = re.compile(r"[0-9０-９]")
# The currency model is the slow one: it only sees chunks that hold a currency sign or word.
_CURRENCY_CUE = re.compile(r"[$€£¥₹]|\b(?:usd|eur|gbp|cny|rmb|jpy|dollars?|euros?|pounds?|yuan|cents?)\b", re.I)
_DATE_SHAPE = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b|\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}")


@dataclass(frozen=True)
class Value:
    start: int
    end: int
    type: str  # number | date | money


class ExtractorUnavailable(Exception):
    pass


def versions() -> dict[str, str]:
    found = {}
    for dist in ("recognizers-text-number", "recognizers-text-number-with-unit", "datefinder", "dateparser", "jionlp"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "missing"
    return found


def describe() -> str:
    v = versions()
    return (f"en: Recognizers-Text number/currency {v['recognizers-text-number']}, datefinder "
            f"{v['datefinder']} + dateparser {v['dateparser']} search_dates; zh: JioNLP {v['jionlp']} money/time + Recognizers-Text "
            f"Chinese number {v['recognizers-text-number']}")


def available() -> str | None:
    """None when every extractor imports, else why not."""
    missing = [d for d, ver in versions().items() if ver == "missing"]
    if missing:
        return f"value check skipped: install {', '.join(missing)} (see docs/evals.md)"
    return None


def extract_values(text: str, lang: str, cache_dir: Path | None = None) -> list[Value]:
    key = hashlib.sha256(f"{REVISION}\0{lang}\0{json.dumps(versions(), sort_keys=True)}\0{text}".encode()).hexdigest()
    cached = cache_dir / f"values-{key[:32]}.json" if cache_dir else None
    if cached and cached.is_file():
        return [Value(*v) for v in json.loads(cached.read_text())]
    values = _extract_zh(text) if lang == "zh" else _extract_en(text)
    values = sorted(set(values), key=lambda v: (v.start, v.end, v.type))
    if cached:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps([[v.start, v.end, v.type] for v in values]))
    return values


def _chunks(text: str):
    start = 0
    while start < len(text):
        end = min(start + CHUNK_CHARS, len(text))
        if end < len(text):
            cut = max(text.rfind("\n", start, end), text.rfind(". ", start, end) + 1)
            end = cut + 1 if cut > start else end
        yield start, text[start:end]
        start = end


@lru_cache(maxsize=4)
def _recognizer_models(culture: str):
    from recognizers_number import NumberRecognizer
    from recognizers_number_with_unit import NumberWithUnitRecognizer

    return (NumberRecognizer(culture).get_number_model(),
            NumberWithUnitRecognizer(culture).get_currency_model())


def _recognized(model, text: str, kind: str, cue: re.Pattern | None = None) -> list[Value]:
    found = []
    for base, chunk in _chunks(text):
        if cue is not None and not cue.search(chunk):
            continue
        for r in model.parse(chunk):
            start, end = base + r.start, base + r.end + 1  # Recognizers-Text ends are inclusive
            if _DIGIT.search(text[start:end]):
                found.append(Value(start, end, kind))
    return found


def _extract_en(text: str) -> list[Value]:
    from recognizers_text import Culture

    numbers, money = _recognizer_models(Culture.English)
    values = _recognized(numbers, text, "number") + _recognized(money, text, "money", _CURRENCY_CUE)
    return values + _dates_en(text)


def _dates_en(text: str) -> list[Value]:
    import datefinder
    from dateparser.search import search_dates

    dates = []
    for base, chunk in _chunks(text):
        found = []
        for _, source, (a, _b) in datefinder.find_dates(chunk, source=True, index=True):
            i = chunk.find(source.strip(), max(a - 8, 0))  # its indices can be off by a character
            if i >= 0 and _DIGIT.search(source):
                found.append((base + i, base + i + len(source.strip())))
        cursor = 0
        for match, _ in search_dates(chunk, languages=["en"], settings={"STRICT_PARSING": True}) or []:
            i = chunk.find(match, cursor)
            if i < 0:
                continue
            cursor = i + len(match)
            a, b = base + i, base + i + len(match)
            if _DATE_SHAPE.search(match) and not any(s < b and a < e for s, e in found):  # not a duplicate
                found.append((a, b))
        dates += [Value(a, b, "date") for a, b in found]
    return dates


@lru_cache(maxsize=1)
def _jionlp():
    with contextlib.redirect_stdout(io.StringIO()):  # it prints a banner on import
        import jionlp
    return jionlp


def _extract_zh(text: str) -> list[Value]:
    from recognizers_text import Culture

    jio = _jionlp()
    numbers, _ = _recognizer_models(Culture.Chinese)
    values = _recognized(numbers, text, "number")
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # JioNLP logs a traceback for each string it cannot parse
    try:
        for base, chunk in _chunks(text):
            for kind, found in (("money", jio.ner.extract_money(chunk)),
                                ("date", jio.ner.extract_time(chunk, time_base=0))):
                for item in found:
                    start, end = item["offset"]
                    if _DIGIT.search(chunk[start:end]):
                        values.append(Value(base + start, base + end, kind))
    finally:
        logging.disable(previous)
    return values
