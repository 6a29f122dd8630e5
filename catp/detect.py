"""Detect a document's languages and domain (for `--domain auto`)."""

from __future__ import annotations

import regex

from catp.rules.catalog import CATALOG

_HAN = regex.compile(r"\p{Han}")
_LATIN = regex.compile(r"[A-Za-z]")
_SAMPLE = 60_000


def _sample(text: str) -> str:
    if len(text) <= _SAMPLE:
        return text
    third = _SAMPLE // 3
    mid = len(text) // 2
    return text[:third] + text[mid : mid + third] + text[-third:]


def detect_langs(text: str) -> tuple[str, set[str]]:
    """(dominant language, languages present) — "zh" and/or "en"."""
    sample = _sample(text)
    han = len(_HAN.findall(sample))
    latin_words = len(_LATIN.findall(sample)) / 5  # about five letters a word
    total = han + latin_words
    if total == 0:
        return "en", {"en"}
    langs = {lang for lang, n in (("zh", han), ("en", latin_words)) if n / total >= 0.05}
    return ("zh" if han >= latin_words else "en"), langs or {"en"}


def detect_domain(text: str, rulesets: list | tuple = ()) -> str:
    """The domain whose detection keywords occur most often, else "general". The built-in domains, and
    each of `rulesets` (the user's files) that lists `detect` keywords: under its `name`, a domain of its
    own, or more keywords for the built-in domain of that name. A tie goes to the user's domain."""
    keywords = CATALOG.detection_keywords()  # a new dict each call
    for ruleset in rulesets:
        if ruleset.detect.keywords:
            keywords[ruleset.name] = keywords.get(ruleset.name, []) + ruleset.detect.keywords
    own = {r.name for r in rulesets if r.detect.keywords}
    sample = _sample(text).lower()
    counts = {d: sum(sample.count(k.lower()) for k in kws) for d, kws in keywords.items()}
    best = max(counts, key=lambda d: (counts[d], d in own, d))
    return best if counts[best] > 0 else "general"
