"""`catp prune FILE|-`: prune one document to a token budget."""

from __future__ import annotations

import warnings
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from catp.commands.output import echo_text, write_output
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
from catp.jsontext import model_json


class Format(str, Enum):
    text = "text"
    json = "json"
    html = "html"


class Domain(str, Enum):
    auto = "auto"
    legal = "legal"
    finance = "finance"
    medical = "medical"
    general = "general"


def _many(files: list[str]) -> bool:
    """Several inputs, a folder, or a JSONL/Parquet file: each document becomes a JSONL row (as `catp batch`)."""
    if len(files) > 1:
        return True
    name = files[0]
    if name == "-":  # stdin is one document here (batch reads it as JSONL)
        return False
    from catp.batch import is_jsonl, is_parquet

    return Path(name).is_dir() or is_jsonl(name) or is_parquet(name)


def prune_command(
    files: list[str] = typer.Argument(..., help="Document to prune (text, Markdown, PDF, DOCX or HTML), or - for stdin. Several "
                                      "files, a folder, or a .jsonl/.parquet file (one document per line/row): "
                                      "one JSONL row per document, as `catp batch` writes them."),
    domain: str = domain_option(),
    budget: Optional[int] = typer.Option(DEFAULTS.budget, "--budget", "-b", help="Budget in tokens."),
    ratio: Optional[str] = typer.Option(DEFAULTS.ratio, "--ratio", "-r", help="Budget as a share of the input, e.g. 1/6."),
    question: Optional[str] = typer.Option(DEFAULTS.question, "--question", "-q", help="Rank text by relevance to this question."),
    rules: list[Path] = rules_option(),
    tokenizer: Optional[str] = tokenizer_option(),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text, json or html."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout (- is stdout)."),
    gap_marker: str = gap_marker_option(),
    cue_window: Optional[int] = cue_window_option(),
    encoding: Optional[str] = typer.Option(DEFAULTS.encoding, "--encoding", help="Override encoding detection (text and HTML, not PDF or DOCX)."),
    max_bytes: int = typer.Option(DEFAULTS.max_bytes, "--max-bytes", min=1, help="Refuse inputs larger than this."),
    scorer: str = scorer_option(),
    scorer_model: Optional[str] = scorer_model_option(),
    scorer_url: Optional[str] = scorer_url_option(),
    scorer_sha256: Optional[Path] = scorer_sha256_option(),
    scorer_max_tokens: Optional[int] = scorer_max_tokens_option(),
    device: Optional[str] = device_option(),
    scorer_compile: Optional[str] = scorer_compile_option(),
    quiet: bool = typer.Option(False, "--quiet", help="No warnings on stderr."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="With many documents: worker processes."),
) -> None:
    """Prune FILE so it fits the budget; print the extract (or JSON / HTML). Many documents give JSONL rows."""
    if _many(files):
        return _prune_many(files, fmt, output, jobs, domain=domain, budget=budget, ratio=ratio,
                           question=question, rules=rules, tokenizer=tokenizer, gap_marker=gap_marker,
                           cue_window=cue_window, scorer=scorer, scorer_model=scorer_model, scorer_url=scorer_url,
                           scorer_sha256=scorer_sha256, scorer_max_tokens=scorer_max_tokens, device=device,
                           scorer_compile=scorer_compile, encoding=encoding, max_bytes=max_bytes, quiet=quiet)
    if jobs != 1:
        raise CatpError("--jobs is for many documents (several files, a folder or a JSONL/Parquet file)")
    file = files[0]
    from catp.decode import read_input
    from catp.pipeline import Pruner, with_input
    from catp.render import to_html

    if budget is None and ratio is None:
        raise CatpError("give --budget N (tokens) or --ratio R (e.g. 1/6)")
    if quiet:
        warnings.simplefilter("ignore")  # catp.cli.main restores the filters
    decoded = read_input(file, encoding=encoding, max_bytes=max_bytes)
    options = scorer_options(scorer_model, scorer_url, scorer_sha256, scorer_max_tokens, device, scorer_compile,
                             scorer=scorer)
    pruner = Pruner(domain=domain, rules=[str(r) for r in rules], tokenizer=tokenizer, scorer=scorer,
                    gap_marker=gap_marker, cue_window_tokens=cue_window, scorer_options=options)
    with _scoring_status(getattr(pruner.scorer, "name", "a model"), quiet):
        doc = pruner.analyse(decoded.text, budget=budget, ratio=ratio, question=question, encoding=decoded.encoding)
    result = with_input(pruner.finish(doc), decoded)
    if fmt is Format.json:
        rendered = model_json(result, indent=2)  # a warning may name a file whose name is not UTF-8
    elif fmt is Format.html:
        rendered = to_html(doc, result)
    else:
        rendered = result.text
    if output and str(output) != "-":  # - is stdout, as for batch
        write_output(output, rendered + "\n")  # a text file ends with a newline, as stdout's does
    else:
        echo_text(rendered)
    if not quiet:
        for warning in result.warnings:
            typer.echo(f"catp: warning: {warning}", err=True)
        s = result.stats
        typer.echo(f"catp: {s.input_tokens} -> {s.output_tokens} tokens (budget {s.budget}, {s.domain}/{s.lang}, "
                   f"{s.elapsed_s:.2f}s)", err=True)


def _scoring_status(scorer: str, quiet: bool):
    """A spinner on stderr while a model scorer works (about a minute on a CPU), on a terminal only: piped or
    redirected, stderr gets the result's lines alone."""
    from contextlib import nullcontext

    from rich.console import Console

    console = Console(stderr=True)
    if quiet or scorer == "lexical" or not console.is_terminal:
        return nullcontext()
    return console.status(f"catp: pruning, the {scorer} scorer ranking the text the rules left undecided")


def _prune_many(files: list[str], fmt: Format, output: Optional[Path], jobs: int, **settings) -> None:
    """`catp prune` over many documents is `catp batch` with its defaults: JSONL rows, in input order."""
    from catp.commands.batch import batch_command

    if fmt is not Format.json and fmt is not Format.text:
        raise CatpError(f"--format {fmt.value} is for one document; many documents are written as JSONL rows")
    batch_command(inputs=files, output="-" if output is None else str(output), jobs=jobs, engine="local",
                  address=None, resume=False, text_field="text", id_field="id", glob=None, setup=None,
                  progress=True, **settings)


def register(app: typer.Typer) -> None:
    app.command("prune")(prune_command)
