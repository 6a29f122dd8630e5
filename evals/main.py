"""The eval run, from options to the report folder."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from catp.errors import CatpError
from evals.aggregate import aggregate, compare
from evals.baselines import BASELINES, DEFAULT_BASELINES, LINGUA_BASELINES
from evals.cli import EvalError
from evals.loaders import load_paths
from evals.runner import RunConfig, parse_budgets, parse_ratios, run_all


@dataclass
class EvalOptions:
    paths: list[Path]
    out: Path
    command: str = "catp eval"
    domain: str | None = None
    rules: list[Path] = field(default_factory=list)
    against: list[Path] = field(default_factory=list)
    ratios: str | None = None
    budgets: str | None = None
    size: str = "tokens"
    question_aware: bool = False
    scorer: str = "lexical"
    scorer_options: dict = field(default_factory=dict)  # model, sha256, max_tokens, device
    tokenizer: str | None = None
    baselines: str = ",".join(DEFAULT_BASELINES)
    jobs: int = 1
    limit: int | None = None
    seed: int = 0
    values: bool = True
    failures: int = 25
    items: bool = False
    rule_report: bool = False
    update_docs: Path | None = None
    cache: Path | None = None
    quiet: bool = False


def build_config(opts: EvalOptions) -> RunConfig:
    if opts.size not in ("tokens", "chars"):
        raise EvalError(f"--size must be tokens or chars, not {opts.size!r}")
    if opts.ratios and opts.budgets:
        raise EvalError("give --ratios or --budgets, not both")
    try:
        budgets = parse_budgets(opts.budgets) if opts.budgets else parse_ratios(opts.ratios or "1/6")
    except ValueError as exc:
        raise EvalError(str(exc)) from None
    names = [b.strip() for b in opts.baselines.split(",") if b.strip()]
    unknown = [b for b in names if b not in BASELINES]
    if unknown:
        raise EvalError(f"unknown baseline {unknown[0]!r}; choose from {', '.join(BASELINES)}")
    if any(b in LINGUA_BASELINES for b in names):
        from evals import lingua

        if reason := lingua.unavailable():
            raise EvalError(reason)
    builtin = [p for p in opts.against if str(p) == BUILTIN_AGAINST]
    against = [p for p in opts.against if str(p) != BUILTIN_AGAINST]
    if builtin and against:
        raise EvalError(f"--against {BUILTIN_AGAINST} (the built-in rules alone) takes no rule files with it")
    for path in [*opts.rules, *against]:
        if not path.is_file():
            raise EvalError(f"{path}: rule file not found")
    if opts.against and not opts.rules:
        raise EvalError("--against needs --rules (the rule set to compare)")
    if opts.limit is not None and opts.limit < 1:
        raise EvalError("--limit must be at least 1")
    variants = [("catp", tuple(str(p) for p in opts.rules))]
    if opts.against:
        a, b = _variant_name(opts.rules), _variant_name(against) if against else f"catp:{BUILTIN_AGAINST}"
        if a == b:
            a, b = f"{a}(A)", f"{b}(B)"
        variants = [(a, tuple(str(p) for p in opts.rules)), (b, tuple(str(p) for p in against))]
    return RunConfig(budgets=budgets, unit=opts.size, baselines=tuple(names), catp_variants=tuple(variants),
                     domain=opts.domain, scorer=opts.scorer, tokenizer=opts.tokenizer,
                     scorer_options=tuple(sorted(opts.scorer_options.items())),
                     question_aware=opts.question_aware, values=opts.values, rule_report=opts.rule_report,
                     seed=opts.seed,
                     cache_dir=str(opts.cache) if opts.cache else None)


BUILTIN_AGAINST = "builtin"  # --against builtin: the built-in rule sets with no extra file


def _variant_name(paths: list[Path]) -> str:
    return "catp:" + "+".join(p.stem for p in paths)


def check_catp(config: RunConfig, domains: set[str]) -> None:
    """Build each Pruner once here, so that a bad rule file or scorer fails before the pool starts."""
    from evals.catp_method import CatpMethod

    for name, rules in config.catp_variants:
        method = CatpMethod(name, domain=config.domain, rules=rules, scorer=config.scorer, tokenizer=config.tokenizer,
                            scorer_options=dict(config.scorer_options))
        for domain in sorted(domains):
            method.pruner(domain)


def run_eval(opts: EvalOptions, started: float | None = None) -> dict:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from evals import extractors, report

    started = started or time.perf_counter()
    console = Console(stderr=True, quiet=opts.quiet)
    config = build_config(opts)
    if config.values and (reason := extractors.available()):
        console.print(f"[yellow]{reason}[/yellow]")
        config.values = False
    sets = load_paths(opts.paths, domain=opts.domain)
    for s in sets:
        if opts.limit:
            s.docs = s.docs[: opts.limit]
        for w in s.warnings:
            console.print(f"[yellow]{s.name}: {w}[/yellow]")
    check_catp(config, {opts.domain or d.domain for s in sets for d in s.docs})
    total = sum(len(s.docs) for s in sets)
    with Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False, disable=not console.is_terminal) as progress:
        task = progress.add_task("docs", total=total)
        results, skipped = run_all(sets, config, opts.jobs, progress=lambda: progress.advance(task))
    for reason in skipped.values():
        console.print(f"[yellow]{reason}[/yellow]")
    aggregated = aggregate(sets, results, config)
    tables = [report.summary_table(aggregated), *report.kind_tables(aggregated), *report.doc_tables(aggregated),
              report.confidence_table(aggregated)]
    comparison = None
    if opts.against:
        a, b = config.catp_variants[0][0], config.catp_variants[1][0]
        comparison = compare(aggregated, a, b)
        tables += report.comparison_tables(comparison, a, b)
    tables += report.label_tables(aggregated)
    wall = time.perf_counter() - started
    failures = {s.name: report.pick_failures([f for r in results.values() if r.set_name == s.name
                                              for f in r.failures], None if s.kind == "checklist" else opts.failures)
                for s in sets}
    payload = {
        "config": {"command": opts.command, "size": config.unit, "budgets": [b.label for b in config.budgets],
                   "scorer": config.scorer, "scorer_options": dict(config.scorer_options), "domain": config.domain, "rules": [str(p) for p in opts.rules],
                   "against": [str(p) for p in opts.against], "tokenizer": _tokenizer_name(config),
                   "seed": config.seed, "jobs": opts.jobs, "limit": opts.limit,
                   "question_aware": config.question_aware, "baselines": list(config.baselines)},
        "extractors": extractors.describe() if config.values else "off",
        "skipped": skipped, "wall_s": wall, "sets": aggregated, "comparison": comparison, "failures": failures,
    }
    plots = report.plot_sets(aggregated, opts.out / "plots", config.budgets, config.unit, skipped)
    failures_md = "\n".join(report.failure_markdown(s.name, failures[s.name], facts=s.kind == "checklist") for s in sets)
    report.write_report(opts.out, payload, tables, failures_md, plots)
    if opts.items:
        report.write_items(opts.out / "items.jsonl", sets, results)
    if opts.rule_report:
        from evals import rule_report

        rule_report.write(opts.out, rule_report.aggregate(sets, results))
    if opts.update_docs:
        from evals.docs import update_docs

        update_docs(opts.update_docs, payload, tables[: 1 + len(sets)])
    out_console = Console(quiet=opts.quiet, width=None if sys.stdout.isatty() else 200)
    for t in tables[: 1 + len(sets)]:
        out_console.print(t.to_rich())
    console.print(f"report: {opts.out}/report.md, report.html, results.json, plots/ ({wall:.1f} s)")
    return payload


def _tokenizer_name(config: RunConfig) -> str:
    try:
        from catp.tokens import load_token_counter

        return load_token_counter(config.tokenizer).name
    except CatpError as exc:
        raise EvalError(str(exc)) from None
