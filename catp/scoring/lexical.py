"""The default scorer: lexical rarity within the document, no model needed.

A unit scores the mean inverse document frequency (over the document's units)
of its terms: English words and Chinese character bigrams. Rare terms carry
facts; repeated template wording does not. With a question, units sharing the
question's rare terms rank first (BM25-style overlap).
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Sequence
from itertools import chain

import regex

from catp.document import Analysis, Document

TERMS = regex.compile(r"[a-z][a-z0-9'\-]+|\d[\d.,]*|\p{Han}+")
STOP_WORDS = frozenset(
    "the a an and or of to in on for by with as at from that this is are be was were it its shall will may "
    "any all such other which who has have had not no been than into under upon".split()
)


def unit_terms(text: str) -> list[str]:
    return _terms(TERMS.findall(text.lower()))


def _terms(tokens: list[str], canon: _Canon | None = None) -> list[str]:
    """The terms of a unit's TERMS tokens (found in lower-cased text), each as the one string `canon` holds
    for it when given."""
    terms: list[str] = []
    one = (lambda t: t) if canon is None else canon.__getitem__
    for tok in tokens:
        if tok[0] >= "\u3400":  # Han: character bigrams
            if len(tok) == 1:
                terms.append(one(tok))
            else:
                bigrams = map(operator.add, tok, tok[1:])  # tok[i] + tok[i + 1]: the bigrams in order
                terms.extend(bigrams if canon is None else map(one, bigrams))
        elif tok not in STOP_WORDS:
            terms.append(one(tok))
    return terms


class _Canon(dict):
    """One string object per term: canon[t] is the first t seen. Sets and dicts of terms then find a term by
    identity instead of comparing strings that lie all over memory (select's novelty lookups on zh 1M)."""

    def __missing__(self, term: str) -> str:
        self[term] = term
        return term


def index_terms(doc: Analysis) -> None:
    """Fill doc.columns.terms, doc.columns.term_sets and doc.term_weight (idf over the document's units),
    once per analysis."""
    columns = doc.columns
    if doc.sealed or (columns.terms and len(columns.terms) == len(doc.units)):  # sealed: indexed (the terms stage)
        return
    text = doc.text
    lowered = text.lower()
    if len(lowered) == len(text):
        # Lower-cased once, each distinct unit text searched once: units with the same text (headings,
        # footers, template lines) share one list and one set. The same tokens as unit_terms(unit text):
        # lower() maps each character on its own here but for the final sigma (σ or ς by context),
        # which no term holds.
        keys = [lowered[u.start : u.end] for u in doc.units]
        findall, canon = TERMS.findall, _Canon()
        by_text = {key: _terms(findall(key), canon) for key in dict.fromkeys(keys)}
        sets = {key: frozenset(ts) for key, ts in by_text.items()}
        columns.terms = [by_text[key] for key in keys]
        columns.term_sets = [sets[key] for key in keys]
    else:  # some character lowers to several (İ): offsets differ, so unit by unit
        columns.terms = [unit_terms(text[u.start : u.end]) for u in doc.units]
        columns.term_sets = list(map(frozenset, columns.terms))
    df = Counter(chain.from_iterable(columns.term_sets))  # in how many units each term occurs
    n = max(len(doc.units), 1)
    weight = {c: math.log(1 + n / c) for c in set(df.values())}  # per count: most terms share a few counts
    doc.term_weight = dict(zip(df, map(weight.__getitem__, df.values())))


class LexicalScorer:
    name = "lexical"
    cheap = True  # scores every live unit: the engine asks it for all of them

    def __init__(self, question_weight: float = 4.0) -> None:
        self.question_weight = question_weight

    @classmethod
    def from_options(cls, **_opts) -> LexicalScorer:
        return cls()

    def score(self, doc: Document, candidates: Sequence[int], *, question: str | None = None,
              budget_tokens: int | None = None) -> dict[int, float]:
        index_terms(doc.analysis)
        terms, idf = doc.columns.terms, doc.term_weight
        n = max(len(doc.units), 1)
        q_terms = {t for t in unit_terms(question) if t in idf} if question else set()
        scores: dict[int, float] = {}
        norm = math.log(1 + n)
        known: dict[int, float] = {}  # id of a term list -> its rarity: units with the same text share a list
        for i in candidates:
            ts = terms[i]
            if not ts:
                scores[i] = 0.0
                continue
            rarity = known.get(id(ts))
            if rarity is None:
                rarity = known[id(ts)] = sum(map(idf.__getitem__, ts)) / norm  # total information, not a mean
            if q_terms:  # relevance decides; rarity only breaks ties
                hits = set(ts) & q_terms  # fsum: exact, so a set's (hash-seeded) order cannot change the result
                relevance = math.fsum(idf[t] for t in hits) / max(math.fsum(idf[t] for t in q_terms), 1e-9)
                scores[i] = self.question_weight * relevance + 0.01 * rarity
            else:
                scores[i] = rarity
        return scores
