"""Score with probabilities computed elsewhere (the GPU keep-lm's predictions), through the keep-model's selection.

    python -m train.replay PROBS.json [python -m evals arguments ...]

PROBS.json maps a document id to one probability per unit (train/keep_lm.py writes it on the device for the
documents of .keeplm/eval.jsonl); a document is recognised by its text, and its units must be the ones catp makes
of it now. The scorer is registered as `keep-replay` for this process only, and selects as `--scorer keep` does
(P ** power per token), so the figures compare the two models' rankings and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from catp.document import Document
from catp.errors import ModelError
from catp.scoring.keep import KeepScorer, load_keep_model
from catp.scoring.registry import register_scorer

EXPORT = Path(__file__).resolve().parent.parent / ".keeplm" / "eval.jsonl"  # the documents the device scored


class ReplayScorer(KeepScorer):
    name = "keep-replay"

    def __init__(self, probabilities: dict[str, list[float]]) -> None:
        super().__init__(load_keep_model())  # its selection settings (mode, power)
        self.by_text = probabilities

    @classmethod
    def from_options(cls, model: str | None = None, **others) -> ReplayScorer:
        found = json.loads(Path(model).read_text(encoding="utf-8"))
        by_text = {}
        for line in EXPORT.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["id"] in found:
                by_text[hashlib.sha256(row["text"].encode()).hexdigest()] = found[row["id"]]
        return cls(by_text)

    def reason(self, probability: float) -> str:
        return f"keep-lm p={probability:.2f}"

    def probabilities(self, doc: Document) -> np.ndarray:
        found = self.by_text.get(hashlib.sha256(doc.text.encode()).hexdigest())
        if found is None or len(found) != len(doc.units):
            raise ModelError("no replayed probabilities for this document (or its units changed)")
        return np.asarray(found, dtype=float)


register_scorer("keep-replay", "train.replay:ReplayScorer")

if __name__ == "__main__":
    from evals.__main__ import main

    probs, rest = sys.argv[1], sys.argv[2:]
    raise SystemExit(main([*rest, "--scorer", "keep-replay", "--scorer-model", probs, "--jobs", "1"]))
