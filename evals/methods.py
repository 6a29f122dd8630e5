"""What every pruning method returns for one document at one budget, so that catp and the
baselines are scored by the same code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from evals.metrics import merge_spans

BASELINE_SEPARATOR = "\n"  # baselines join non-adjacent spans with whitespace only


@dataclass
class Outcome:
    kept: list[tuple[int, int]]
    text: str
    seconds: float = 0.0
    reasons: list[list[str]] = field(default_factory=list)  # per kept span, when known
    budget_used: int | None = None  # the token budget finally given to the pruner
    note: str = ""
    units: list | None = None  # per-unit decisions (catp, when explained)


@dataclass(frozen=True)
class Budget:
    """`limit` in `unit` ("tokens" or "chars") for one document."""

    unit: str
    limit: float


class Method(Protocol):
    name: str

    def run(self, text: str, budget: Budget, size, *, doc_id: str, domain: str,
            question: str | None = None) -> Outcome: ...


def render(text: str, spans: list[tuple[int, int]], separator: str = BASELINE_SEPARATOR) -> Outcome:
    merged = merge_spans(spans)
    return Outcome(kept=merged, text=separator.join(text[s:e] for s, e in merged))
