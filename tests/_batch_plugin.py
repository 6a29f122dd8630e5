"""A `catp batch --setup`-style hook for tests/integration/batch/test_batch.py: registers a scorer that kills its
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


def count_rule_parses() -> None:
    """A setup hook for tests/unit/rules/test_rules_loader.py: each parse in this worker of a rule file holding the text of
    $CATP_TEST_PARSE_MARK appends a line to $CATP_TEST_PARSE_LOG (the workers of a process pool are counted
    there, where the parent cannot see them). Every rule file is parsed by loader.load_text (load_file calls it)."""
    from catp.rules import loader

    real, mark, log = loader.load_text, os.environ["CATP_TEST_PARSE_MARK"], os.environ["CATP_TEST_PARSE_LOG"]

    def counting(raw: str, *args, **kwargs):
        if mark in raw:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
        return real(raw, *args, **kwargs)

    loader.load_text = counting
