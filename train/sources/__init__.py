"""Extractors: a fetched repository file (bytes) -> {key: document text}.

Each corpus module registers one or more extractors by name; a label record names its extractor and key, so
`train.fetch` can rebuild the exact text from the repository snapshot. Texts are never stored in this repo.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

Extractor = Callable[[bytes], dict[str, str]]
EXTRACTORS: dict[str, Extractor] = {}


def extractor(name: str) -> Callable[[Extractor], Extractor]:
    def register(fn: Extractor) -> Extractor:
        if name in EXTRACTORS:
            raise ValueError(f"extractor {name!r} registered twice")
        EXTRACTORS[name] = fn
        return fn

    return register


def load_all() -> dict[str, Extractor]:
    """Import every module of this package, so each registers its extractors."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return EXTRACTORS
