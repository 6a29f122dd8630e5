"""`catp serve --upstream URL`: an OpenAI-compatible gateway that prunes prompts too long for the engine
(pip install 'catp[serve]'; docs/gateway.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from catp.commands.pruner_options import SERVED_TOKENIZER_HELP, domain_option, rules_option, tokenizer_option
from catp.config import DEFAULTS
from catp.errors import CatpError


def serve_command(
    upstream: str = typer.Option(..., "--upstream", "-u", help="The vLLM server, with or without /v1."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default: this machine only)."),
    port: int = typer.Option(8100, "--port", "-p", min=1, max=65535, help="Port to listen on."),
    domain: str = domain_option(),
    rules: list[Path] = rules_option(),
    tokenizer: Optional[str] = tokenizer_option(SERVED_TOKENIZER_HELP),
    concurrency: int = typer.Option(DEFAULTS.concurrency, "--concurrency", "-c", min=1, help="Keep each prompt within this many requests' KV share."),
    max_tokens: int = typer.Option(DEFAULTS.max_tokens, "--max-tokens", min=1, help="Tokens reserved for the answer when a request gives no max_tokens."),
    workers: int = typer.Option(2, "--workers", "-w", min=1, help="Pruning processes."),
    queue: int = typer.Option(256, "--queue", min=0, help="Requests that may wait for a worker; past that: 429."),
    max_body: int = typer.Option(64 * 1024 * 1024, "--max-body", min=1, help="Largest request body in bytes; past that: 413."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="Environment variable holding the key clients must send."),
    upstream_key_env: str = typer.Option("CATP_UPSTREAM_API_KEY", "--upstream-key-env", help="Environment variable holding the upstream's key, if it needs one."),
    connect_timeout: float = typer.Option(5.0, "--connect-timeout", help="Seconds to wait for the upstream's connection."),
    read_timeout: float = typer.Option(600.0, "--read-timeout", help="Seconds to wait for each upstream read."),
) -> None:
    """Serve the OpenAI API on HOST:PORT in front of UPSTREAM, pruning every prompt too long for it."""
    from catp.commands.budget import check_timeouts
    from catp.rules.loader import load_rule_files
    from catp.rules.catalog import resolve

    check_timeouts(connect_timeout, read_timeout)
    key = None
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise CatpError(f"--api-key-env {api_key_env}: that environment variable is empty or not set")
    resolve(None if domain == "auto" else domain, load_rule_files(rules))  # a bad domain or rule file fails now
    from catp.backends.client import split_server_url

    split_server_url(upstream)
    from catp.serve.app import ServeSettings
    from catp.serve.server import serve

    settings = ServeSettings(upstream=upstream, domain=None if domain == "auto" else domain,
                             rules=[str(p) for p in rules], tokenizer=tokenizer, concurrency=concurrency,
                             max_tokens=max_tokens, workers=workers, queue=queue, max_body=max_body, api_key=key,
                             upstream_api_key=os.environ.get(upstream_key_env) or None,
                             connect_timeout=connect_timeout, read_timeout=read_timeout)
    serve(settings, host=host, port=port)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
