"""The scorer's command-line options, defined once for every command that prunes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from catp.config import DEFAULTS


def scorer_option():
    return typer.Option(DEFAULTS.scorer, "--scorer",
                        help="lexical, keep (the keep-model), keep-lm (its GPU tier), lm, vllm or auto.")


def scorer_model_option():
    return typer.Option(None, "--scorer-model",
                        help="LM scorer model: HF id or folder (--scorer keep: a keep-model folder).")


def scorer_url_option():
    return typer.Option(None, "--scorer-url", help="vLLM server for --scorer vllm.")


def scorer_sha256_option():
    return typer.Option(None, "--scorer-sha256", help="sha256 manifest checked before loading.")


def scorer_max_tokens_option():
    return typer.Option(None, "--scorer-max-tokens", help="Bound on tokens the LM scores.")


def device_option():
    return typer.Option(None, "--device", help="LM scorer device: cpu, cuda, auto.")


def scorer_compile_option():
    return typer.Option(None, "--scorer-compile", help="LM scorer on CUDA: auto, or true (torch.compile the "
                        "decoder: ~10 s once, then faster; for long runs and many documents), or false.")


def scorer_options(model: Optional[str], url: Optional[str], sha256: Optional[Path], max_tokens: Optional[int],
                   device: Optional[str], compile: Optional[str], *, scorer: str = "lm") -> dict[str, Any]:
    """The options given, as `Pruner(scorer_options=...)` takes them (unset ones left out). The lexical
    scorer takes none: giving one with it is a mistake, not something to ignore silently."""
    given = {"model": model, "url": url, "sha256": str(sha256) if sha256 else None, "max_tokens": max_tokens,
             "device": device, "compile": compile}
    options = {k: v for k, v in given.items() if v is not None}
    if scorer == "lexical" and options:
        from catp.errors import CatpError

        names = ", ".join(OPTION_NAMES[k] for k in options)
        raise CatpError(f"{names}: for --scorer lm, vllm or auto; the lexical scorer (the default) takes no options")
    return options


OPTION_NAMES = {"model": "--scorer-model", "url": "--scorer-url", "sha256": "--scorer-sha256",
                "max_tokens": "--scorer-max-tokens", "device": "--device", "compile": "--scorer-compile"}
