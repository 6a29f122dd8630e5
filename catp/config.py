"""Every pruning default, written once: `DEFAULTS`, a `PruneSettings`.

The `Pruner`, `BatchOptions`, the options of `catp prune`, `catp batch`, `catp serve` (and `ask`, `budget`,
`decode`), the gateway's settings and the framework integrations all take their defaults from here;
tests/unit/test_config.py checks that they agree. This module imports nothing of catp, so anything may import it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict


class PruneSettings(BaseModel):
    """How a document is pruned (the Pruner's settings), and the budget and reading settings around it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # the Pruner
    domain: str = "auto"  # "auto": detected per document; else legal, finance, medical, general or a rule file's
    rules: tuple[str | Path, ...] = ()  # the user's rule files, on top of the built-in ones
    tokenizer: str | None = None  # None: the Qwen BPE (catp.tokens)
    scorer: str = "lexical"  # lexical, lm, vllm, auto, or a registered name
    scorer_options: dict | None = None  # None: the scorer's own defaults
    gap_marker: str = " … "  # put between non-adjacent kept pieces
    cue_window_tokens: int | None = None  # None: the rule sets' own window after but/however/但是
    regex_timeout: float = 2.0  # CPU seconds per rule and document
    question_share: float = 0.8  # with a question: the share of the budget its most relevant units take first
    # the budget of one call (None: none given; one of budget and ratio is needed)
    budget: int | None = None
    ratio: str | float | None = None
    question: str | None = None
    # reading a file
    encoding: str | None = None  # None: detected
    max_bytes: int = 200 * 1024 * 1024  # a larger input is refused
    # a served model's budget (catp ask, budget, serve, the integrations' `server=`)
    max_tokens: int = 512  # tokens reserved for the answer
    concurrency: int = 1  # requests expected at once, each given its share of the KV cache


DEFAULTS = PruneSettings()
