"""`catp batch INPUT...`: prune many documents (files, folders, JSONL, Parquet) into JSONL or Parquet results."""

from __future__ import annotations

import os

from pathlib import Path
from typing import Optional

import typer

from catp.commands.scorer_options import (
    device_option,
    scorer_compile_option,
    scorer_max_tokens_option,
    scorer_model_option,
    scorer_option,
    scorer_options,
    scorer_sha256_option,
    scorer_url_option,
)
from catp.commands.pruner_options import cue_window_option, domain_option, gap_marker_option, rules_option, tokenizer_option
from catp.config import DEFAULTS
from catp.errors import CatpError


def batch_command(
    inputs: list[str] = typer.Argument(..., help="Files (text, PDF, DOCX), folders (their files, recursively), JSONL files "
                                                 "(.jsonl/.ndjson: one document per line) or Parquet files "
                                                 "(.parquet/.pq: one per row); - reads JSONL from stdin."),
    output: str = typer.Option("-", "--out", "--output", "-o",
                               help="Results: a .parquet path is a Parquet folder, any other a JSONL file "
                                    "(default: JSONL on stdout)."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Workers (processes, or Ray actors); each loads one Pruner."),
    engine: str = typer.Option("local", "--engine", help="local: this machine's process pool; ray: Ray Data "
                                                         "actors (pip install 'catp\\[ray]')."),
    address: Optional[str] = typer.Option(None, "--address", help="With --engine ray: auto (the running cluster) "
                                                                 "or ray://HOST:PORT; default a local Ray."),
    resume: bool = typer.Option(False, "--resume", help="Keep the rows already in the output and prune only "
                                                       "the input rows whose id is not there (appended)."),
    domain: str = domain_option(),
    budget: Optional[int] = typer.Option(DEFAULTS.budget, "--budget", "-b", help="Budget in tokens (a JSONL row's own budget/ratio wins)."),
    ratio: Optional[str] = typer.Option(DEFAULTS.ratio, "--ratio", "-r", help="Budget as a share of each input, e.g. 1/6."),
    question: Optional[str] = typer.Option(DEFAULTS.question, "--question", "-q", help="Rank text by relevance to this question (a row's own wins)."),
    rules: list[Path] = rules_option(),
    tokenizer: Optional[str] = tokenizer_option(),
    gap_marker: str = gap_marker_option(),
    cue_window: Optional[int] = cue_window_option(),
    scorer: str = scorer_option(),
    scorer_model: Optional[str] = scorer_model_option(),
    scorer_url: Optional[str] = scorer_url_option(),
    scorer_sha256: Optional[Path] = scorer_sha256_option(),
    scorer_max_tokens: Optional[int] = scorer_max_tokens_option(),
    device: Optional[str] = device_option(),
    scorer_compile: Optional[str] = scorer_compile_option(),
    text_field: str = typer.Option("text", "--text-field", help="JSONL field or Parquet column holding the document."),
    id_field: str = typer.Option("id", "--id-field", help="JSONL field or Parquet column holding the id "
                                                          "(else FILE:LINE, FILE:ROW for Parquet)."),
    glob: Optional[str] = typer.Option(None, "--glob", help="Which files of a folder to read, e.g. '*.txt' (default: text, Markdown, PDF, DOCX, HTML, JSONL and Parquet files)."),
    encoding: Optional[str] = typer.Option(DEFAULTS.encoding, "--encoding", help="Override encoding detection for text and HTML files (not PDF or DOCX)."),
    max_bytes: int = typer.Option(DEFAULTS.max_bytes, "--max-bytes", min=1, help="Refuse text files larger than this."),
    setup: Optional[str] = typer.Option(None, "--setup", help="MODULE:FUNCTION run first in each worker (register custom scorers or matchers)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar and no summary line."),
) -> None:
    """Prune every document; one row each (id, text, kept, stats, warnings, error), in input order.

    A document that cannot be read or pruned gives a row with `error` set; no row is lost.
    --engine local and --engine ray give the same rows; --resume skips the ids already in --out.
    Exit code 0 when every row succeeded, 1 when some rows are errors.
    """
    from catp.batch import BatchInterrupted, BatchOptions, run_batch

    if address and engine != "ray":
        raise CatpError("--address is for --engine ray")

    if budget is None and ratio is None:
        raise CatpError("give --budget N (tokens) or --ratio R (e.g. 1/6)")
    if budget is not None and ratio is not None:
        raise CatpError("give a budget or a ratio, not both")
    if ratio is not None:
        from catp.pipeline import parse_ratio

        parse_ratio(ratio)  # a bad ratio is one error, not one per row
    loaded_rules = _check_settings(domain, rules, tokenizer, scorer, cue_window, setup)
    _check_folders(inputs, glob, output)
    options = BatchOptions(
        budget=budget, ratio=ratio, question=question, domain=domain, rules=loaded_rules,
        tokenizer=tokenizer, scorer=scorer,
        scorer_options=scorer_options(scorer_model, scorer_url, scorer_sha256, scorer_max_tokens, device,
                                      scorer_compile, scorer=scorer),
        gap_marker=gap_marker, cue_window_tokens=cue_window, encoding=encoding, max_bytes=max_bytes,
        text_field=text_field, id_field=id_field, glob=glob, setup=setup)
    try:
        summary = run_batch(inputs, output, options, jobs=jobs, progress=progress and not quiet, engine=engine,
                            address=address, resume=resume)
    except BatchInterrupted as stop:
        where = "stdout" if output == "-" else output
        typer.echo(stop.summary.line(where), err=True)
        if output != "-":
            typer.echo(f"catp: the rows above are whole in {where}; run it again with --resume to do the rest",
                       err=True)
        if stop.terminated:  # 128 + SIGTERM, as a shell or a supervisor reads it
            typer.echo("catp: terminated", err=True)
            raise typer.Exit(143) from None
        raise
    if not quiet:
        typer.echo(summary.line("stdout" if output == "-" else output), err=True)
    if summary.errors:
        raise typer.Exit(1)


def _check_settings(domain: str, rules: list[Path], tokenizer: Optional[str], scorer: str,
                    cue_window: Optional[int], setup: Optional[str]) -> list:
    """Settings shared by every row are checked once here: a mistake is one usage error (exit 2), not an
    error row per document that replaces the output file. Returns the rule files loaded: the workers' Pruners
    get them so, and none parses them again."""
    from catp.rules.catalog import CATALOG
    from catp.rules.loader import load_rule_files
    from catp.rules.registry import RuleRegistry
    from catp.scoring.registry import SCORERS
    from catp.tokens import load_token_counter

    if setup is not None:  # first: it may register the rule kinds (register_kind) that the rule files use
        from catp.batch import resolve_setup

        resolve_setup(setup)()  # importable, and names a function (each worker calls it too)
    loaded = load_rule_files([str(r) for r in rules])
    CATALOG.compose(None if domain == "auto" else domain, loaded)
    RuleRegistry([], cue_window_tokens=cue_window)  # checks the window's bounds
    if setup is None and scorer not in (*SCORERS, "auto"):  # --setup may register more scorers
        raise CatpError(f"unknown scorer {scorer!r}; choose one of {', '.join([*SCORERS, 'auto'])}")
    if tokenizer is not None:
        load_token_counter(tokenizer)
    return loaded


def _check_folders(inputs: list[str], glob: str | None, output=None) -> None:
    """A folder with no file to read is a mistake (a wrong path or --glob), not an empty result that
    replaces --out."""
    from catp.batch import folder_files

    exclude = None if output is None or str(output) == "-" else os.path.realpath(output)
    for name in inputs:
        folder = Path(name)
        if name != "-" and folder.is_dir() and not folder_files(folder, glob, exclude):
            which = f"--glob {glob!r}" if glob else "no text, Markdown, PDF, DOCX, HTML, JSONL or Parquet file; --glob '*' takes every file"
            raise CatpError(f"{name}: no files to read in this folder ({which})")


def register(app: typer.Typer) -> None:
    app.command("batch")(batch_command)
