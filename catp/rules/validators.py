"""Checks a regex match must pass before it counts (like Presidio's validate_result)."""

from __future__ import annotations

from collections.abc import Callable

import regex

_CN_PREFIX = regex.compile(r"^(百分之|第)")


def cn_numeral(text: str) -> bool:
    """True when cn2an reads the text as a number (三百万, 二〇二四, 百分之五, 壹佰元)."""
    import cn2an

    core = _CN_PREFIX.sub("", text).rstrip("元整圆")
    if not core:
        return False
    for mode in ("strict", "normal", "smart"):
        try:
            cn2an.cn2an(core, mode)
            return True
        except (ValueError, KeyError, IndexError, TypeError):
            continue
    return False


VALIDATORS: dict[str, Callable[[str], bool]] = {"cn_numeral": cn_numeral}
