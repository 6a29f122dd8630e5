"""The keep-model: P(an expert keeps this unit), learned from expert keep-labels (docs/keep-model.md).

A linear model over keep_features' views (hashed character n-grams of the unit, its neighbours and its section
title) and named rule and layout features, squashed by the logistic function. It ships in the package as
`catp/models/keep/keep.npz` (plain arrays, loaded without pickle) and `keep.json` (its card: features, training
data, figures, and the npz's sha256, checked on load). Scoring is numpy only: one pass of n-gram hashing over
the text, then gathers and cumulative sums.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from catp.document import Document
from catp.errors import ModelError
from catp.scoring.keep_features import VIEWS, neighbours, text_buckets, unit_bounds, unit_features, view_scores

MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "keep"
FORMAT = "catp-keep-model"


@dataclass(frozen=True)
class KeepModel:
    bits: int
    views: tuple[str, ...]  # which of keep_features.VIEWS the model reads, in VIEWS' order
    tables: np.ndarray  # (len(views), 2**bits) float32: one weight per n-gram bucket and view
    named: dict[str, float]  # a weight per named feature (keep_features.unit_features)
    card: dict

    @classmethod
    def load(cls, path: str | Path | None = None) -> KeepModel:
        """The model from a folder holding keep.json and keep.npz (default: the shipped one), its sha256
        checked."""
        folder = Path(path) if path is not None else MODEL_DIR
        card_path, weights_path = folder / "keep.json", folder / "keep.npz"
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
            data = weights_path.read_bytes()
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot read the keep-model in {folder}: {exc}") from exc
        if card.get("format") != FORMAT:
            raise ModelError(f"{card_path} is not a keep-model card (format {card.get('format')!r})")
        if hashlib.sha256(data).hexdigest() != card.get("weights_sha256"):
            raise ModelError(f"{weights_path}: sha256 differs from its card's weights_sha256; refusing to load it")
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            tables = arrays["tables"].astype(np.float32)
            weights = arrays["named"].astype(np.float64)
        names, views = card["named_features"], tuple(card["views"])
        if (not set(views) <= set(VIEWS) or tables.shape != (len(views), 2 ** card["hash_bits"])
                or len(names) != len(weights)):
            raise ModelError(f"{weights_path}: array shapes do not match its card")
        return cls(card["hash_bits"], views, tables, dict(zip(names, weights.tolist())), card)

    def logits(self, doc: Document) -> np.ndarray:
        """Per unit, the model's log-odds that an expert keeps it."""
        if not doc.units:
            return np.zeros(0)
        starts, ends = unit_bounds(doc)
        buckets = text_buckets(doc.text, self.bits)
        prev, nxt, section = neighbours(doc)
        whose = {"self": None, "prev": prev, "next": nxt, "section": section}  # the unit each view reads
        total = np.zeros(len(doc.units))
        for view, table in zip(self.views, self.tables):
            scores, where = view_scores(buckets, starts, ends, table), whose[view]
            total += scores if where is None else np.where(where >= 0, scores[np.maximum(where, 0)], 0.0)
        named = self.named.get
        total += [sum(named(name, 0.0) for name in names) for names in unit_features(doc)]
        return total

    def probabilities(self, doc: Document) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.logits(doc)))


_LOADED: dict[str, KeepModel] = {}


def load_keep_model(path: str | Path | None = None) -> KeepModel:
    """KeepModel.load, once per folder per process."""
    key = str(Path(path).resolve()) if path is not None else ""
    if key not in _LOADED:
        _LOADED[key] = KeepModel.load(path)
    return _LOADED[key]


class KeepScorer:
    """Scores each live unit with the keep-model's probability. In the card's "value" mode (the shipped one)
    select takes it as the unit's whole value (catp.select.keep); in "mix" mode the scores are the lexical ones
    and select weighs the rules' ranking by it. With a question it ranks as the lexical scorer does
    (question-aware selection is unchanged)."""

    name = "keep"
    cheap = True

    def __init__(self, model: KeepModel | None = None) -> None:
        self.model = model or load_keep_model()
        selection = self.model.card.get("selection", {})
        self.power = float(selection.get("power", 1.0))  # catp.select.keep
        # "value": P ** power is a unit's whole value; "mix": the rules' ranking (lexical scores, facts, priors),
        # each unit's density times P ** power
        self.mode = selection.get("mode", "value")

    @classmethod
    def from_options(cls, model: str | None = None, **others) -> KeepScorer:
        """The shipped model, or the folder `model` names (keep.json and keep.npz)."""
        if others:
            raise ModelError(f"the keep scorer takes only a model folder (--scorer-model), not {', '.join(others)}")
        return cls(load_keep_model(model))

    def reason(self, probability: float) -> str:
        return f"keep-model p={probability:.2f}"

    def score(self, doc: Document, candidates: Sequence[int], *, question: str | None = None,
              budget_tokens: int | None = None) -> dict[int, float]:
        if question or self.mode != "value":
            from catp.scoring.lexical import LexicalScorer

            return LexicalScorer().score(doc, candidates, question=question)
        p = self.probabilities(doc)
        return {i: float(p[i]) for i in candidates}

    def probabilities(self, doc: Document) -> np.ndarray:
        return self.model.probabilities(doc)
