"""The Pruner's command-line options, defined once for every command that prunes (prune, batch, ask, serve)."""

from __future__ import annotations

import typer

from catp.config import DEFAULTS

TOKENIZER_HELP = "Tokenizer: tokenizer.json, folder or HF id. Default: Qwen BPE."
SERVED_TOKENIZER_HELP = "Pruning tokenizer (default: the served model's if local, else Qwen BPE)."


def domain_option():
    return typer.Option(DEFAULTS.domain, "--domain", "-d",
                        help="Rule set: auto (detected), legal, finance, medical, general, or a --rules file's name.")


def rules_option():
    return typer.Option(list(DEFAULTS.rules), "--rules", help="Extra rule file (repeatable).")


def tokenizer_option(help: str = TOKENIZER_HELP):
    return typer.Option(DEFAULTS.tokenizer, "--tokenizer", help=help)


def gap_marker_option():
    return typer.Option(DEFAULTS.gap_marker, "--gap-marker", help="Put between non-adjacent kept pieces.")


def cue_window_option():
    return typer.Option(DEFAULTS.cue_window_tokens, "--cue-window",
                        help="Tokens kept after but/however/但是… (default 50).")
