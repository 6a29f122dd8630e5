"""Baselines at the same budget as catp: head truncation (what vLLM does at max-model-len),
middle-out (head + tail), random sentences (seeded), and LLMLingua-2 when installed."""

from __future__ import annotations

import random
import re
import time

from evals.align import align_output, fit
from evals.methods import Budget, Outcome, render

SENTENCE = re.compile(r"[^.!?。！？\n]*(?:[.!?。！？]+|\n+|$)")


def sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans: up to and including . ! ? 。！？ or a run of newlines."""
    return [(m.start(), m.end()) for m in SENTENCE.finditer(text) if m.end() > m.start()]


class HeadTruncation:
    name = "head"

    def run(self, text, budget: Budget, size, **_) -> Outcome:
        started = time.perf_counter()
        out = render(text, [(0, size.head_end(budget.limit))])
        out.seconds = time.perf_counter() - started
        return out


class MiddleOut:
    """Half the budget for the head, the rest for the tail."""

    name = "middle-out"

    def run(self, text, budget: Budget, size, **_) -> Outcome:
        started = time.perf_counter()
        head_end = size.head_end(budget.limit / 2)
        used = size.pieces([(0, head_end)])[0]
        spans = [(0, head_end), (size.tail_start(budget.limit - used, not_before=head_end), len(text))]
        out = _fit(text, render(text, spans), budget, size, shrink=lambda s: _shrink_tail(s, size))
        out.seconds = time.perf_counter() - started
        return out


class RandomSentences:
    """Sentences in a seeded random order until the budget is full; output in text order."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def run(self, text, budget: Budget, size, *, doc_id: str = "", **_) -> Outcome:
        started = time.perf_counter()
        spans = sentences(text)
        costs = size.pieces(spans)
        order = list(range(len(spans)))
        random.Random(f"{self.seed}:{doc_id}").shuffle(order)
        used, chosen = 0, []
        for i in order:
            if used + costs[i] <= budget.limit:
                chosen.append(i)
                used += costs[i]
        chosen.sort()
        picked = [spans[i] for i in chosen]
        out = _fit(text, render(text, picked), budget, size, shrink=lambda s: s[:-1])
        out.seconds = time.perf_counter() - started
        return out


class UnitOracle:
    """A reference, not a pruner: it reads the gold. catp's own units (its segmenter) ranked by
    the gold items they hold per unit of size, taken greedily until the budget is full. What a
    perfect ranker of catp's units would keep; a target above it needs finer units."""

    name = "oracle"
    needs_gold = True

    def run(self, text, budget: Budget, size, *, gold=(), **_) -> Outcome:
        from bisect import bisect_right

        from catp.detect import detect_langs
        from catp.document import Analysis
        from catp.segment.splitter import segment

        started = time.perf_counter()
        units = [(u.start, u.end) for u in segment(Analysis(text=text, lang=detect_langs(text)[0])).units]
        starts = [a for a, _ in units]
        worth = [0.0] * len(units)
        for g in gold:  # an item split over units gives each an equal share
            first = max(bisect_right(starts, g.start) - 1, 0)
            last = max(bisect_right(starts, g.end - 1) - 1, first)
            for i in range(first, last + 1):
                worth[i] += 1.0 / (last - first + 1)
        costs = size.pieces(units)
        order = sorted((i for i in range(len(units)) if worth[i] > 0), key=lambda i: (-worth[i] / max(costs[i], 1), i))
        used, chosen = 0, []
        for i in order:
            if used + costs[i] <= budget.limit:
                chosen.append(i)
                used += costs[i]
        picked = [units[i] for i in sorted(chosen)]
        out = _fit(text, render(text, picked), budget, size, shrink=lambda s: s[:-1])
        out.seconds = time.perf_counter() - started
        return out


def _shrink_tail(spans, size):
    (h0, h1), (t0, t1) = spans[0], spans[-1]
    return [(h0, h1), (min(t0 + max((t1 - t0) // 50, 1), t1), t1)]


def _fit(text, out: Outcome, budget: Budget, size, shrink) -> Outcome:
    """Token counts of joined pieces can exceed the sum of their parts: trim until the
    rendered output fits (a no-op for character sizes)."""
    spans = out.kept
    while spans and size.of(out.text) > budget.limit:
        spans = shrink(spans)
        out = render(text, spans)
    return out


class LLMLingua2:
    """LLMLingua-2 (token classification) via the `llmlingua` package. Its output drops
    words, so kept spans are found by aligning its output to the input in order (evals/align.py)."""

    name = "llmlingua2"
    MODEL = "microsoft/llmlingua-2-xlm-roberta-large-meetingbank"

    def __init__(self, model: str | None = None) -> None:
        self.model = model or self.MODEL
        self._compressor = None

    @classmethod
    def unavailable(cls, model: str | None = None) -> str | None:
        """None when usable; else why it is skipped."""
        try:
            import llmlingua  # noqa: F401
        except ImportError:
            return "llmlingua2 skipped: the `llmlingua` package is not installed"
        try:
            from huggingface_hub import snapshot_download

            snapshot_download(model or cls.MODEL, local_files_only=True)
        except Exception as exc:  # no hub here: the model must already be in the local cache
            return f"llmlingua2 skipped: model {model or cls.MODEL} is not in the local cache ({type(exc).__name__})"
        return None

    def run(self, text, budget: Budget, size, **_) -> Outcome:
        if self._compressor is None:
            from llmlingua import PromptCompressor

            self._compressor = PromptCompressor(model_name=self.model, use_llmlingua2=True, device_map="cpu")
        started = time.perf_counter()
        rate = min(max(budget.limit / max(size.total, 1), 0.01), 1.0)
        compressed = self._compressor.compress_prompt(text, rate=rate)["compressed_prompt"]
        out = fit(text, align_output(text, compressed), budget, size)
        out.seconds = time.perf_counter() - started
        return out


def build_baselines(names: list[str], seed: int = 0) -> tuple[list, dict[str, str]]:
    """The requested baselines that can run, and a reason for each one skipped."""
    built, skipped, plain = [], {}, None
    for name in names:
        if name == "head":
            built.append(HeadTruncation())
        elif name == "middle-out":
            built.append(MiddleOut())
        elif name == "random":
            built.append(RandomSentences(seed))
        elif name == "oracle":
            built.append(UnitOracle())
        elif name in LINGUA_BASELINES:
            from evals import lingua

            if reason := lingua.unavailable():
                raise ValueError(reason)
            plain = plain or lingua.LLMLingua()  # one model and one plain run per document for both
            built.append(plain if name == "llmlingua" else lingua.LongLLMLingua(plain=plain))
        elif name == "llmlingua2":
            reason = LLMLingua2.unavailable()
            if reason:
                skipped[name] = reason
            else:
                built.append(LLMLingua2())
        else:
            raise ValueError(f"unknown baseline {name!r}; choose from {', '.join(BASELINES)}")
    return built, skipped


LINGUA_BASELINES = ("llmlingua", "longllmlingua")  # evals/lingua.py: the `lingua` extra and a local causal LM
BASELINES = ("head", "middle-out", "random", "llmlingua2", "oracle", *LINGUA_BASELINES)
DEFAULT_BASELINES = ("head", "middle-out", "random", "llmlingua2", "oracle")
