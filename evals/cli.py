"""`catp eval` / `python -m evals`: measure what survives pruning."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from catp.errors import CatpError


class EvalError(CatpError):
    """Bad eval options or data: one line, exit code 2."""


def eval_command(
    ctx: typer.Context,
    paths: Optional[list[Path]] = typer.Argument(None, help="Data files or folders (same as --data)."),
    data: Optional[list[Path]] = typer.Option(None, "--data", help="JSONL file, folder of them, or a raw corpus (CUAD folder, TAT-QA or CAIL2019/CJRC .json, E3C XMI or CCKS folder, brat, .bio). Repeatable."),
    domain: Optional[str] = typer.Option(None, help="Force one domain for catp; default: each document's own."),
    rules: Optional[list[Path]] = typer.Option(None, "--rules", help="Extra rule file(s) for catp."),
    against: Optional[list[Path]] = typer.Option(None, "--against", help="Compare --rules against these rule file(s), or against 'builtin' (the built-in rules alone): per-label deltas."),
    ratios: Optional[str] = typer.Option(None, help="Comma list of ratios, e.g. 1/10,1/6,1/4,1/2 (default 1/6)."),
    budgets: Optional[str] = typer.Option(None, help="Comma list of absolute budgets (in --size units) instead of ratios."),
    size: str = typer.Option("tokens", "--size", help="tokens (the tokenizer's) or chars (non-whitespace characters)."),
    question_aware: bool = typer.Option(False, "--question-aware", help="Also prune once per question with prune(question=...)."),
    out: Path = typer.Option(Path("evals-report"), "--out", help="Report folder."),
    scorer: str = typer.Option("lexical", help="catp scorer name."),
    scorer_model: Optional[str] = typer.Option(None, "--scorer-model", help="LM scorer model: HF id, folder or .gguf file."),
    scorer_sha256: Optional[Path] = typer.Option(None, "--scorer-sha256", help="sha256 manifest (or a .gguf's digest) checked before loading."),
    scorer_max_tokens: Optional[int] = typer.Option(None, "--scorer-max-tokens", help="Bound on tokens the LM scores per document."),
    device: Optional[str] = typer.Option(None, "--device", help="LM scorer device: cpu, cuda, auto."),
    tokenizer: Optional[str] = typer.Option(None, help="Tokenizer (default: bundled Qwen BPE)."),
    baselines: str = typer.Option("head,middle-out,random,llmlingua2", help="Comma list of baselines ('' for none): head, middle-out, random, llmlingua2, oracle (reads the gold: a reference), llmlingua, longllmlingua (token-level peers with a local causal LM: the `lingua` extra; longllmlingua is question-aware, measured with --question-aware)."),
    jobs: int = typer.Option(0, "--jobs", help="Worker processes (0: one per core)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="At most N documents per set (the first N)."),
    seed: int = typer.Option(0, help="Seed of the random-sentences baseline."),
    values: bool = typer.Option(True, "--values/--no-values", help="Run the independent number/date/money check."),
    failures: int = typer.Option(25, "--failures", help="Lost gold items listed per set (a checklist set lists every lost fact)."),
    items: bool = typer.Option(False, "--items", help="Also write items.jsonl: each gold item's fate (kept or not) per method and budget, for per-item analysis."),
    rule_report: bool = typer.Option(False, "--rule-report", help="Also write rules.md and rules.json: per rule, the gold per 1,000 tokens of the text it touches, kept and not kept (what a rule's priority should follow)."),
    update_docs: Optional[Path] = typer.Option(None, "--update-docs", help="Write the results table into this Markdown file."),
    cache: Optional[Path] = typer.Option(None, "--cache", help="Cache folder for extracted values (default ~/.cache/catp/evals)."),
) -> None:
    """Measure what survives pruning: gold kept, size, latency, values, questions; vs baselines."""
    from catp.commands.scorer_options import scorer_options
    from evals.main import EvalOptions, run_eval

    all_paths = [*(paths or []), *(data or [])]
    if not all_paths:
        raise EvalError("give at least one data file or folder (--data PATH)")
    args = sys.argv[1:]
    if args and args[0] == "eval":
        args = args[1:]
    options = EvalOptions(
        paths=all_paths, domain=domain, rules=list(rules or []), against=list(against or []), ratios=ratios,
        budgets=budgets, size=size, question_aware=question_aware, out=out, scorer=scorer, tokenizer=tokenizer,
        scorer_options=scorer_options(scorer_model, None, scorer_sha256, scorer_max_tokens, device, None, scorer=scorer),
        baselines=baselines, jobs=jobs or os.cpu_count() or 1, limit=limit, seed=seed, values=values,
        failures=failures, items=items, rule_report=rule_report, update_docs=update_docs,
        cache=cache or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "catp" / "evals",
        command=f"{ctx.command_path} {shlex.join(args)}".strip(),
    )
    started = time.perf_counter()
    run_eval(options, started)
