"""Scorers by name, imported lazily so that torch loads only for the LM scorer."""

from __future__ import annotations

import importlib

from catp.errors import CatpError, ModelError
from catp.scoring.base import Scorer

SCORERS: dict[str, str] = {
    "lexical": "catp.scoring.lexical:LexicalScorer",
    "lm": "catp.scoring.lm:LMScorer",
    "vllm": "catp.scoring.remote:VLLMScorer",
    "keep": "catp.scoring.keep:KeepScorer",
    "keep-lm": "catp.scoring.keep_lm:KeepLMScorer",
}


def register_scorer(name: str, target: str) -> None:
    """Add a scorer, e.g. register_scorer("mine", "my_pkg.scoring:MyScorer")."""
    SCORERS[name] = target


def _load(name: str):
    try:
        module, attr = SCORERS[name].split(":")
    except KeyError as exc:
        raise CatpError(f"unknown scorer {name!r}; choose one of {', '.join([*SCORERS, 'auto'])}") from exc
    return getattr(importlib.import_module(module), attr)


def build_scorer(name: str | Scorer | None = None, **options) -> Scorer:
    """A scorer by name ("lexical", "lm", "vllm", "auto") or an instance passed through.
    "auto" tries the LM scorer and falls back to lexical, with a warning, if it cannot load."""
    if name is None:
        name = "lexical"
    if not isinstance(name, str):
        return name
    options = {k: v for k, v in options.items() if v is not None}
    if name == "auto":
        try:
            return _load("lm").from_options(**options)
        except (ModelError, ImportError, OSError) as exc:
            import warnings

            warnings.warn(f"LM scorer unavailable ({exc}); using the lexical scorer", stacklevel=2)
            return _load("lexical").from_options()
    if name == "lexical":
        return _load("lexical").from_options()
    return _load(name).from_options(**options)
