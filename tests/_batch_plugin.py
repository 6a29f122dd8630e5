"""A `catp batch --setup`-style hook for tests/test_batch.py: registers a scorer that kills its
worker process on a document containing CRASH-ME (to test that no row is lost when a worker dies)."""

from __future__ import annotations

import os

from catp.scoring.lexical import LexicalScorer
from catp.scoring.registry import register_scorer


class CrashyScorer(LexicalScorer):
    name = "crashy"

    def score(self, doc, candidates, **kwargs):
        if "CRASH-ME" in doc.text:
            os._exit(3)
        return super().score(doc, candidates, **kwargs)


def setup() -> None:
    register_scorer("crashy", "_batch_plugin:CrashyScorer")
