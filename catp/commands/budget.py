"""`catp budget --server URL`: the token budget a vLLM engine allows, and where each figure came from."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from catp.config import DEFAULTS

DEFAULT_SERVER = "http://127.0.0.1:8000/v1"


class Format(str, Enum):
    text = "text"
    json = "json"


class Lang(str, Enum):
    en = "en"
    zh = "zh"


def server_option() -> str:
    return typer.Option(os.environ.get("CATP_SERVER", DEFAULT_SERVER), "--server", "-s",
                        help="vLLM OpenAI-compatible server, with or without /v1 (env CATP_SERVER).")


def budget_command(
    server: str = server_option(),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Served model name; default: the first one."),
    concurrency: int = typer.Option(DEFAULTS.concurrency, "--concurrency", "-c", min=1, help="Requests expected to run at once."),
    max_tokens: int = typer.Option(DEFAULTS.max_tokens, "--max-tokens", min=1, help="Tokens reserved for the answer."),
    question: str = typer.Option("", "--question", "-q", help="Count this question in the prompt overhead."),
    lang: Lang = typer.Option(Lang.en, "--lang", help="Which prompt template: en or zh."),
    template: Optional[Path] = typer.Option(None, "--template", help="Prompt template file (YAML/JSON)."),
    max_model_len: Optional[int] = typer.Option(None, "--max-model-len", min=1, help="Override the server's max_model_len."),
    metrics: bool = typer.Option(True, "--metrics/--no-metrics", help="Read KV-cache size from /metrics."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Bearer key; default env CATP_API_KEY or OPENAI_API_KEY."),
    connect_timeout: float = typer.Option(5.0, "--connect-timeout", help="Seconds to wait for a connection."),
    read_timeout: float = typer.Option(60.0, "--read-timeout", help="Seconds to wait for each read."),
    retries: int = typer.Option(2, "--retries", min=0, help="Retries on connection errors, 429 and 5xx."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds for each request in all: retries, body and stream."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text or json."),
) -> None:
    """Print the engine's budget: max_model_len, KV-cache share per request, prompt overhead, document budget."""
    from catp.backends.budget import ChatCounter, engine_budget
    from catp.backends.client import VLLMClient
    from catp.backends.templates import load_templates

    check_timeouts(connect_timeout, read_timeout, timeout)
    log_to_stderr()
    tmpl = load_templates(template)[lang.value]
    *head, user = tmpl.render("", question, gap="…")
    with VLLMClient(server, model=model, api_key=api_key, connect_timeout=connect_timeout,
                    read_timeout=read_timeout, retries=retries,
                    timeout=timeout) as client:
        figures = engine_budget(client, ChatCounter(client), [*head, user], max_tokens=max_tokens,
                                concurrency=concurrency, max_model_len=max_model_len, use_metrics=metrics)
    if fmt is Format.json:
        typer.echo(figures.model_dump_json(indent=2))
        return
    print_budget(figures)


def print_budget(figures) -> None:
    """One figure a line: name, tokens, where it came from."""
    rows = [("max_model_len", figures.max_model_len)]
    if figures.kv_cache_tokens is not None:
        rows.append((f"KV cache ({figures.num_blocks} blocks x {figures.block_size})", figures.kv_cache_tokens))
        rows.append((f"KV share per request (concurrency {figures.concurrency})", figures.per_request_kv_tokens))
    rows += [("reserved for the answer", figures.max_tokens), ("prompt limit", figures.prompt_limit),
             ("template + question", figures.prompt_overhead), ("document budget", figures.document_budget)]
    width = max(len(name) for name, _ in rows)
    typer.echo(f"model {figures.model} on {figures.backend}")
    for name, fig in rows:
        typer.echo(f"{name:<{width}}  {fig.value:>11,}  {fig.source}")
    for warning in figures.warnings:
        typer.echo(f"catp: warning: {warning}", err=True)


def check_timeouts(connect_timeout: float, read_timeout: float, timeout: float = 1.0) -> None:
    """Timeouts must be positive: httpx takes 0 as 'do not wait' and a negative one crashes the socket."""
    from catp.errors import CatpError

    for name, value in (("--connect-timeout", connect_timeout), ("--read-timeout", read_timeout),
                        ("--timeout", timeout)):
        if not value > 0:
            raise CatpError(f"{name} must be more than 0 seconds, got {value}")


def log_to_stderr() -> None:
    """Show retries as they happen (other warnings are printed at the end)."""
    import logging
    import sys

    logger = logging.getLogger("catp.backends.client")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("catp: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
        logger.propagate = False


def register(app: typer.Typer) -> None:
    app.command("budget")(budget_command)
