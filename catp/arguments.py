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
