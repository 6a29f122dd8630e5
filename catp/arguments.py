"""Checks of the library's arguments at its boundary (Pruner, prune, prune_bytes, prune_file): a value of the
wrong type or out of range is a CatpError naming the argument, not a TypeError or ValueError from deep inside."""

from __future__ import annotations

import math
from numbers import Integral, Real

from catp.errors import CatpError


def number(name: str, value, *, low: float | None = None, high: float | None = None, integer: bool = False,
           none: bool = False, infinite: bool = False, error=CatpError):
    """`value` when it is a number (an int when `integer`) in [low, high]; None passes when `none`; inf when
    `infinite`. bool is refused (True is not a count)."""
    if value is None and none:
        return None
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, Integral if integer else Real):
        raise error(f"{name} must be {kind}, got {value!r}")
    if math.isnan(value) or (math.isinf(value) and not infinite):
        raise error(f"{name} must be a finite number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"at least {low}" if high is None else f"from {low} to {high}"
        raise error(f"{name} must be {bounds}, got {value!r}")
    return value


def positive_timeout(name: str, value):
    """A timeout in seconds: a finite number > 0, inf or None (no timeout)."""
    if value is None:
        return None
    number(name, value, low=0, infinite=True)
    if value <= 0:
        raise CatpError(f"{name} must be more than 0 seconds (None or inf: no timeout), got {value!r}")
    return value


def check_encoding(encoding) -> None:
    """None, or the name of a codec Python has: an InputError otherwise (a name holding bytes that are not UTF-8,
    from the command line, made the codec lookup raise UnicodeEncodeError)."""
    import codecs

    from catp.errors import InputError

    if encoding is None:
        return
    if not isinstance(encoding, str):
        raise InputError(f"encoding must be a str (a codec name), got {encoding!r}")
    try:
        codecs.lookup(encoding)
    except (LookupError, UnicodeError, ValueError) as exc:
        raise InputError(f"unknown encoding {encoding!r} ({type(exc).__name__})") from None


def check_max_bytes(max_bytes) -> None:
    from catp.errors import InputError

    number("max_bytes", max_bytes, low=1, integer=True, error=InputError)


def check_pruner_arguments(*, domain, rules, tokenizer, scorer, cue_window_tokens, question_share,
                           scorer_options) -> None:
    """Pruner's arguments, each of the type it takes (see Pruner's docstring)."""
    from pathlib import Path

    if domain is not None and not isinstance(domain, str):
        raise CatpError(f"domain must be a str (legal, finance, medical, general, auto) or None, got {domain!r}")
    from catp.rules.loader import LoadedRuleSet

    single = (str, Path, LoadedRuleSet)
    if rules is not None and not isinstance(rules, single) and not (
            isinstance(rules, (list, tuple)) and all(isinstance(r, single) for r in rules)):
        raise CatpError(f"rules must be a rule file path, a loaded rule file, or a list of them, got {rules!r}")
    from catp.tokens import TokenCounter

    if tokenizer is not None and not isinstance(tokenizer, (str, Path, TokenCounter)):
        raise CatpError(f"tokenizer must be a path or hub id (str), a TokenCounter or None, got {tokenizer!r}")
    from catp.scoring.base import Scorer

    if scorer is not None and not isinstance(scorer, (str, Scorer)):
        raise CatpError(f"scorer must be a name (lexical, lm, vllm, auto), a Scorer or None, got {scorer!r}")
    number("cue window (cue_window_tokens, --cue-window)", cue_window_tokens, low=1, high=4096, integer=True, none=True)
    number("question_share", question_share, low=0, high=1)
    if scorer_options is not None and not isinstance(scorer_options, dict):
        raise CatpError(f"scorer_options must be a dict or None, got {scorer_options!r}")
