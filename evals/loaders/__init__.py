"""Read eval data: the shared JSONL format, and raw public formats converted on the fly.

One module per format. Add one by writing `detect(path) -> bool` and
`load(path, **opts) -> list[DataSet]` and appending them to `LOADERS` (see docs/evals.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evals.loaders.base import DataError, set_name
from evals.loaders.ccks import is_ccks_raw, load_ccks_raw
from evals.loaders.checklist import is_checklist, load_checklists
from evals.loaders.cjrc import is_cjrc_raw, load_cjrc_raw
from evals.loaders.cuad import is_cuad_raw, load_cuad_raw
from evals.loaders.e3c import is_e3c_xmi, load_e3c_xmi
from evals.loaders.jsonl import load_jsonl
from evals.loaders.standoff import is_brat_dir, load_bio, load_brat
from evals.loaders.tatqa import is_tatqa_raw, load_tatqa_raw
from evals.schema import DataSet

__all__ = [
    "LOADERS",
    "DataError",
    "load_bio",
    "load_brat",
    "load_ccks_raw",
    "load_checklists",
    "load_cjrc_raw",
    "load_cuad_raw",
    "load_e3c_xmi",
    "load_jsonl",
    "load_paths",
    "load_tatqa_raw",
    "set_name",
]

Loader = tuple[str, Callable[[Path], bool], Callable[..., list[DataSet]]]
LOADERS: list[Loader] = [
    ("cuad-raw", is_cuad_raw, load_cuad_raw),
    ("checklist", is_checklist, load_checklists),
    ("jsonl", lambda p: p.is_file() and p.suffix == ".jsonl", load_jsonl),
    ("tatqa-raw", is_tatqa_raw, load_tatqa_raw),
    ("cjrc-raw", is_cjrc_raw, load_cjrc_raw),
    ("e3c-xmi", is_e3c_xmi, load_e3c_xmi),
    ("ccks-raw", is_ccks_raw, load_ccks_raw),
    ("brat", is_brat_dir, load_brat),
    ("bio", lambda p: p.is_file() and p.suffix == ".bio", load_bio),
]


def load_paths(paths: list[Path], *, domain: str | None = None) -> list[DataSet]:
    """Every data set under the given files and folders, in a stable order."""
    sets: list[DataSet] = []
    for path in paths:
        if not path.exists():
            raise DataError(f"{path}: no such file or folder")
        found = _load_one(path, domain)
        if found is None and path.is_dir():
            found = [s for child in sorted(path.iterdir()) for s in (_load_one(child, domain) or [])]
        if not found:
            raise DataError(f"{path}: no eval data found (expected .jsonl, a CUAD folder with "
                            "master_clauses.csv, TAT-QA or CAIL2019/CJRC .json, E3C .xml, CCKS .txtoriginal.txt, brat .ann/.txt or .bio)")
        if not any(s.docs for s in found):  # else a report of nothing, exit 0
            raise DataError(f"{path}: no documents in it")
        sets.extend(found)
    names: dict[str, int] = {}
    for s in sets:  # two sets of the same name stay apart
        names[s.name] = names.get(s.name, 0) + 1
        if names[s.name] > 1:
            s.name = f"{s.name}#{names[s.name]}"
    return sets


def _load_one(path: Path, domain: str | None) -> list[DataSet] | None:
    for _, detect, load in LOADERS:
        if detect(path):
            sets = load(path, domain=domain) if load in (load_brat, load_bio) and domain else load(path)
            return sets
    return None
