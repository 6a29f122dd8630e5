"""Lone surrogates: what a str can hold that no tokenizer, JSON encoder or UTF-8 writer takes. A leaf module
(it imports nothing from catp), so that decode and the rule loader can both check text."""

from __future__ import annotations

import re

LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogates(text: str) -> bool:
    """A str can hold lone surrogates (bytes that were not UTF-8 on the command line, a YAML "\\ud800"
    escape); tokenizers and JSON cannot take them."""
    return LONE_SURROGATE.search(text) is not None
