"""The shared JSONL format: one EvalDoc per line (../shared/evals-data)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from evals.loaders.base import DataError, set_name
from evals.schema import DataSet, EvalDoc


def load_jsonl(path: Path) -> list[DataSet]:
    docs = []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                docs.append(EvalDoc.model_validate(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{line_no}: not JSON ({exc.msg})") from exc
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                message = first["msg"].removeprefix("Value error, ")
                raise DataError(f"{path}:{line_no}: {where + ': ' if where else ''}{message}") from exc
            if not docs[-1].text.strip():  # else the run stops later on 'the input is empty', naming no line
                raise DataError(f"{path}:{line_no}: the text is empty")
    return [DataSet(set_name(path), str(path), docs)]
