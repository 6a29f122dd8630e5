"""What a batch is run with (`BatchOptions`) and what it reports (`BatchSummary`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from catp.config import DEFAULTS


@dataclass
class BatchOptions:
    """What every worker's Pruner is built with, and the batch-wide budget and reading options (defaults:
    catp.config.DEFAULTS)."""

    budget: int | None = DEFAULTS.budget
    ratio: str | float | None = DEFAULTS.ratio
    question: str | None = DEFAULTS.question
    domain: str = DEFAULTS.domain
    rules: list = field(default_factory=lambda: list(DEFAULTS.rules))  # paths, or files loaded (rules.loader.load_file)
    tokenizer: str | None = DEFAULTS.tokenizer
    scorer: str = DEFAULTS.scorer
    scorer_options: dict = field(default_factory=lambda: dict(DEFAULTS.scorer_options or {}))
    gap_marker: str = DEFAULTS.gap_marker
    cue_window_tokens: int | None = DEFAULTS.cue_window_tokens
    encoding: str | None = DEFAULTS.encoding
    max_bytes: int = DEFAULTS.max_bytes
    text_field: str = "text"
    id_field: str = "id"
    glob: str | None = None  # a folder's files to read; None: DOCUMENT_SUFFIXES
    setup: str | None = None  # "module:function" run once in each worker first (register scorers, matchers)


@dataclass
class BatchSummary:
    rows: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    elapsed_s: float = 0.0
    jobs: int = 1
    worker_restarts: int = 0
    skipped: int = 0  # rows already in the output (resume)
    engine: str = "local"
    unmatched: int = 0  # resume: rows in the output that no input row accounts for (duplicated, or other inputs)

    @property
    def ok(self) -> int:
        return self.rows - self.errors

    def line(self, where: str) -> str:
        """The one-line summary `catp batch` prints on stderr."""
        secs = self.elapsed_s or float("nan")
        skipped = f", {self.skipped} skipped (already written)" if self.skipped else ""
        if self.unmatched:
            skipped += (f"; the output holds {self.unmatched} more rows than these inputs have ids for "
                        "(duplicated by two runs, or rows of other inputs): check it")
        return (f"catp: {self.rows} rows ({self.ok} ok, {self.errors} errors{skipped}) -> {where} in "
                f"{self.elapsed_s:.1f}s: {self.rows / secs:.2f} docs/s, {self.input_tokens:,} -> "
                f"{self.output_tokens:,} tokens ({self.input_tokens / secs:,.0f} input tokens/s), "
                f"{self.jobs} jobs, engine {self.engine}")
