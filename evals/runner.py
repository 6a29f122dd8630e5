"""Run every method on every document at every budget, in a process pool where each worker
builds its methods (and catp's Pruners) once. Results are keyed by document, so the order
in which workers finish never changes a number (latency aside)."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from evals.baselines import build_baselines
from evals.catp_method import CatpMethod
from evals.extractors import extract_values
from evals.metrics import KeptIndex, question_supported
from evals.rule_report import doc_rule_stats
from evals.methods import Budget
from evals.schema import EvalDoc
from evals.sizing import doc_size, nonws_count, nonws_prefix

FAILURES_PER_DOC = 3
CONTEXT_CHARS = 160


@dataclass(frozen=True)
class BudgetSpec:
    """A ratio of the input ('1/6') or an absolute size ('2000'), in the run's size unit."""

    label: str
    ratio: float | None = None
    absolute: int | None = None

    def limit(self, unit: str, total: int) -> float:
        if self.absolute is not None:
            return float(self.absolute)
        raw = self.ratio * total
        return float(int(raw)) if unit == "tokens" else raw


def parse_ratios(text: str) -> list[BudgetSpec]:
    specs = []
    for piece in [p.strip() for p in text.split(",") if p.strip()]:
        try:
            value = float(Fraction(piece))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"invalid ratio {piece!r}; use fractions like 1/6 or decimals like 0.25") from None
        if not 0 < value <= 1:
            raise ValueError(f"ratio {piece!r} is outside (0, 1]")
        specs.append(BudgetSpec(piece, ratio=value))
    if not specs:
        raise ValueError("no ratios given")
    return specs


def parse_budgets(text: str) -> list[BudgetSpec]:
    specs = []
    for piece in [p.strip() for p in text.split(",") if p.strip()]:
        if not piece.isdigit() or int(piece) <= 0:
            raise ValueError(f"invalid budget {piece!r}; use whole numbers > 0, e.g. 1000,4000")
        specs.append(BudgetSpec(piece, absolute=int(piece)))
    if not specs:
        raise ValueError("no budgets given")
    return specs


@dataclass
class RunConfig:
    budgets: list[BudgetSpec]
    unit: str = "tokens"
    baselines: tuple[str, ...] = ("head", "middle-out", "random", "llmlingua2")
    catp_variants: tuple[tuple[str, tuple[str, ...]], ...] = (("catp", ()),)  # (name, rule files)
    domain: str | None = None
    scorer: str = "lexical"
    scorer_options: tuple[tuple[str, object], ...] = ()  # (name, value) pairs for the LM scorer
    tokenizer: str | None = None
    question_aware: bool = False
    values: bool = True
    rule_report: bool = False
    seed: int = 0
    cache_dir: str | None = None


@dataclass
class MethodScore:
    """One method on one document at one budget."""

    gold: list[bool]
    values: list[bool]
    questions: list[bool]
    questions_aware: list[bool] | None
    in_tokens: int
    out_tokens: int
    in_chars: int
    out_chars: int
    seconds: float
    limit: float
    over_budget: bool
    note: str = ""


@dataclass
class DocResult:
    set_name: str
    index: int
    value_types: list[str]
    scores: dict[tuple[str, str], MethodScore] = field(default_factory=dict)  # (method, budget label)
    failures: list[dict] = field(default_factory=list)
    rule_stats: dict[tuple[str, str], dict[str, list[float]]] = field(default_factory=dict)  # (method, budget)


class Worker:
    """Everything one process needs, built once."""

    def __init__(self, config: RunConfig) -> None:
        from catp.tokens import load_token_counter

        self.config = config
        self.counter = load_token_counter(config.tokenizer)
        self.catp = [CatpMethod(name, domain=config.domain, rules=rules, scorer=config.scorer,
                                tokenizer=config.tokenizer, scorer_options=dict(config.scorer_options))
                     for name, rules in config.catp_variants]
        self.baselines, self.skipped = build_baselines(list(config.baselines), seed=config.seed)

    def run(self, set_name: str, index: int, doc: EvalDoc, every_loss: bool = False) -> DocResult:
        """every_loss: record every lost gold item (checklists), not a few spread over the document."""
        cfg = self.config
        text = doc.text
        size = doc_size(cfg.unit, text, self.counter)
        prefix = nonws_prefix(text)
        in_tokens = size.total if cfg.unit == "tokens" else self.counter.count(text)
        in_chars = prefix[-1]
        cache = Path(cfg.cache_dir) if cfg.cache_dir else None
        values = extract_values(text, doc.lang, cache) if cfg.values else []
        result = DocResult(set_name, index, [v.type for v in values])
        answerable = [q for q in doc.questions if q.gold_index]
        for spec in cfg.budgets:
            budget = Budget(cfg.unit, spec.limit(cfg.unit, size.total))
            for method in [*self.catp, *self.baselines]:
                is_catp = isinstance(method, CatpMethod)
                run_kwargs = {"explain": True} if is_catp else {}
                if getattr(method, "needs_gold", False):
                    run_kwargs["gold"] = doc.gold
                out = method.run(text, budget, size, doc_id=doc.id, domain=doc.domain, **run_kwargs)
                kept = KeptIndex(prefix, out.kept, out.text)
                gold = [kept.is_kept(g.start, g.end, g.quote) for g in doc.gold]
                value_flags = [kept.is_kept(v.start, v.end, text[v.start:v.end]) for v in values]
                plain = [question_supported(gold, q.gold_index, q.support) for q in answerable]
                aware = None
                if cfg.question_aware and (is_catp or getattr(method, "question_aware", False)):
                    aware = [self._aware(method, doc, q, budget, size, prefix) for q in answerable]
                out_size = size.of(out.text)
                result.scores[(method.name, spec.label)] = MethodScore(
                    gold=gold, values=value_flags, questions=plain, questions_aware=aware,
                    in_tokens=in_tokens, out_tokens=self.counter.count(out.text), in_chars=in_chars,
                    out_chars=nonws_count(out.text), seconds=out.seconds, limit=budget.limit,
                    over_budget=out_size > budget.limit, note=out.note)
                if is_catp:
                    result.failures.extend(_failures(doc, gold, out, method.name, spec.label, every_loss))
                    if cfg.rule_report and out.units is not None:
                        result.rule_stats[(method.name, spec.label)] = doc_rule_stats(out.units, doc.gold)
        return result

    def _aware(self, method, doc, question, budget, size, prefix) -> bool:
        out = method.run(doc.text, budget, size, doc_id=doc.id, domain=doc.domain, question=question.question,
                         cold=False)
        kept = KeptIndex(prefix, out.kept, out.text)
        flags = {i: kept.is_kept(doc.gold[i].start, doc.gold[i].end, doc.gold[i].quote) for i in question.gold_index}
        return all(flags.values()) if question.support == "all" else any(flags.values())


def _failures(doc: EvalDoc, gold: list[bool], out, method: str, budget: str, every_loss: bool = False) -> list[dict]:
    """A few lost gold items, spread over the document (or all of them), with the decisions around them."""
    lost = [i for i, k in enumerate(gold) if not k]
    if not lost:
        return []
    step = max(len(lost) // FAILURES_PER_DOC, 1)
    picked = lost if every_loss else lost[::step][:FAILURES_PER_DOC]
    records = []
    for i in picked:
        g = doc.gold[i]
        a, b = max(g.start - CONTEXT_CHARS, 0), min(g.end + CONTEXT_CHARS, len(doc.text))
        units = [u for u in (out.units or []) if u.end > a and u.start < b]
        records.append({
            "doc": doc.id, "gold_index": i, "kind": g.kind, "label": g.label, "why": g.why, "method": method,
            "budget": budget,
            "quote": g.quote[:300], "context": doc.text[a:b], "context_start": a,
            "start": g.start, "end": g.end,
            "units": [{"start": u.start, "end": u.end, "kept": u.kept, "deleted": u.deleted, "reasons": u.reasons,
                       "priority": u.priority, "score": u.score, "overlaps_gold": u.end > g.start and u.start < g.end}
                      for u in units],
        })
    return records


_WORKER: Worker | None = None


def _init_worker(config: RunConfig) -> None:
    global _WORKER
    _WORKER = Worker(config)


def _run_task(task: tuple[str, int, EvalDoc, bool]) -> DocResult:
    return _WORKER.run(*task)


def run_all(sets, config: RunConfig, jobs: int, progress=None) -> tuple[dict[tuple[str, int], DocResult], dict[str, str]]:
    """Results per (set name, doc index), and the baselines skipped (with why)."""
    tasks = [(s.name, i, d, s.kind == "checklist") for s in sets for i, d in enumerate(s.docs)]
    tasks.sort(key=lambda t: -len(t[2].text))  # longest first: better packing over the pool
    _, skipped = build_baselines(list(config.baselines), seed=config.seed)
    results: dict[tuple[str, int], DocResult] = {}
    advance = progress or (lambda: None)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks) or 1))
    if jobs == 1:
        worker = Worker(config)
        for task in tasks:
            results[(task[0], task[1])] = worker.run(*task)
            advance()
        return results, skipped
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(config,)) as pool:
        futures = [pool.submit(_run_task, t) for t in tasks]
        for future in as_completed(futures):
            r = future.result()
            results[(r.set_name, r.index)] = r
            advance()
    return results, skipped
