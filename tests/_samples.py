"""Real text for the core tests, read by path from the shared evals data (never copied here).

CATP_EVALS_DATA overrides where the JSONL files live. Tests that need them skip, saying why,
when the folder is missing.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def evals_data() -> Path | None:
    for candidate in (os.environ.get("CATP_EVALS_DATA"), ROOT.parent / "shared" / "evals-data",
                      "/work/shared/evals-data"):
        if candidate and Path(candidate, "cuad.dev.jsonl").is_file():
            return Path(candidate)
    return None


@lru_cache(maxsize=None)
def _docs(name: str, n: int) -> tuple[dict, ...]:
    folder = evals_data()
    if folder is None:
        pytest.skip("the shared evals data is missing (set CATP_EVALS_DATA)")
    out = []
    with open(folder / f"{name}.dev.jsonl", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if len(out) == n:
                break
    return tuple(out)


def real_texts(name: str, n: int = 2, max_chars: int = 4000) -> list[str]:
    """The first `max_chars` characters of the first `n` documents of a data set
    (cuad, cail2019_cjrc, ccks2017_cner, tatqa, e3c_en)."""
    return [d["text"][:max_chars] for d in _docs(name, n)]


def real_en_zh(max_chars: int = 4000) -> list[str]:
    """One English contract, one Chinese judgment, one Chinese medical record, one English report."""
    return [real_texts(name, 1, max_chars)[0] for name in ("cuad", "cail2019_cjrc", "ccks2017_cner", "tatqa")]
