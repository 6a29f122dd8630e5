"""`catp ask FILE "question"`: prune FILE to the engine's budget and ask a vLLM server about it."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from catp.commands.output import echo_text
from catp.commands.budget import Lang, check_timeouts, log_to_stderr, server_option
from catp.commands.pruner_options import SERVED_TOKENIZER_HELP, domain_option, rules_option, tokenizer_option
from catp.config import DEFAULTS
from catp.errors import CatpError
from catp.jsontext import model_json


class Format(str, Enum):
    text = "text"
    json = "json"


def ask_command(
    file: str = typer.Argument(..., help="Document, or - for stdin."),
    question: str = typer.Argument(..., help="The question to ask about it."),
    server: str = server_option(),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Served model name; default: the first one."),
    domain: str = domain_option(),
    stream: bool = typer.Option(False, "--stream/--no-stream", help="Print the answer as it arrives."),
    max_tokens: int = typer.Option(DEFAULTS.max_tokens, "--max-tokens", min=1, help="Tokens reserved for the answer."),
    show_pruned: bool = typer.Option(False, "--show-pruned", help="Print the pruned document (stderr) first."),
    concurrency: int = typer.Option(DEFAULTS.concurrency, "--concurrency", "-c", min=1, help="Keep the prompt within this many requests' KV share."),
    budget: Optional[int] = typer.Option(DEFAULTS.budget, "--budget", "-b", min=1, help="Document budget in tokens (default: the engine's)."),
    rules: list[Path] = rules_option(),
    tokenizer: Optional[str] = tokenizer_option(SERVED_TOKENIZER_HELP),
    lang: Optional[Lang] = typer.Option(None, "--lang", help="Prompt template language (default: detected)."),
    template: Optional[Path] = typer.Option(None, "--template", help="Prompt template file (YAML/JSON)."),
    system: Optional[str] = typer.Option(None, "--system", help="An extra system instruction."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Bearer key; default env CATP_API_KEY or OPENAI_API_KEY."),
    connect_timeout: float = typer.Option(5.0, "--connect-timeout", help="Seconds to wait for a connection."),
    read_timeout: float = typer.Option(120.0, "--read-timeout", help="Seconds to wait for each read."),
    retries: int = typer.Option(2, "--retries", min=0, help="Retries on connection errors, 429 and 5xx."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds for each request in all: retries, body and stream."),
    encoding: Optional[str] = typer.Option(DEFAULTS.encoding, "--encoding", help="Override encoding detection."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text (the answer) or json (the whole result)."),
    quiet: bool = typer.Option(False, "--quiet", help="No warnings or summary on stderr."),
) -> None:
    """Prune FILE to fit the served model's budget, ask QUESTION, print the answer."""
    from catp.backends.ask import ask
    from catp.decode import read_text

    check_timeouts(connect_timeout, read_timeout, timeout)
    text, _ = read_text(file, encoding=encoding)
    if not quiet:
        log_to_stderr()
    out = sys.stdout
    printer = None
    printed: list[bool] = []
    if stream and fmt is Format.text:
        def printer(delta: str) -> None:
            out.write(delta)
            out.flush()
            printed[:] = [True]

    try:
        result = ask(text, question, server=server, model=model, api_key=api_key, domain=domain,
                     rules=[str(r) for r in rules], tokenizer=tokenizer, lang=lang.value if lang else None,
                     template=template, messages=[{"role": "system", "content": system}] if system else (),
                     max_tokens=max_tokens, concurrency=concurrency, budget=budget, on_delta=printer,
                     connect_timeout=connect_timeout, read_timeout=read_timeout, retries=retries,
                     timeout=timeout)
    except CatpError as exc:
        if not printed:
            raise
        out.write("\n")  # the partial answer ends its line; the error says it is partial
        out.flush()
        raise type(exc)(f"the answer above is incomplete: {exc}") from exc
    if show_pruned:
        typer.echo(f"--- pruned document ({result.prune.stats.output_tokens} tokens) ---", err=True)
        echo_text(result.prune.text, err=True)
        typer.echo("--- end ---", err=True)
    if fmt is Format.json:
        typer.echo(model_json(result, indent=2))
    elif printer is not None:
        out.write("\n")
    else:
        echo_text(result.answer)
    if not quiet:
        for warning in result.warnings:
            typer.echo(f"catp: warning: {warning}", err=True)
        s, b = result.prune.stats, result.budget
        typer.echo(f"catp: document {s.input_tokens} -> {s.output_tokens} tokens (budget {result.document_budget}, "
                   f"{s.domain}/{s.lang}); prompt {result.prompt_tokens} of {b.prompt_limit.value} "
                   f"(max_model_len {b.max_model_len.value} - answer {b.max_tokens.value}); "
                   f"re-pruned {result.reprunes}x; {result.elapsed_s:.2f}s", err=True)


def register(app: typer.Typer) -> None:
    app.command("ask")(ask_command)
