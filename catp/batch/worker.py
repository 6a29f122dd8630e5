"""One batch worker: the `Worker` that turns one `Item` into one output row, in this process, in a pool's
worker process or in a Ray actor (all call `Worker.prune`, which is what makes their rows identical).

A row is {"id", "text", "kept", "stats", "warnings", "error"}; a document that cannot be read or pruned
gives an error row (`error_row`), never an exception.
"""

from __future__ import annotations

import importlib
import os

from catp.batch.options import BatchOptions
from catp.batch.readers import Item
from catp.decode import read_input
from catp.errors import CatpError
from catp.pipeline import Pruner, with_input
from catp.rules.loader import load_rule_files

ROW_KEYS = ("id", "text", "kept", "stats", "warnings", "error")


class Worker:
    """Prunes Items into rows with one Pruner (`pruner`), built on first use, so rules, tokenizer, taggers and a
    model scorer load once per worker, never per document or per domain."""

    def __init__(self, options: BatchOptions, pooled: bool = False):
        if pooled:  # one document per core already: no tokenizer threads on top (a user's setting wins)
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.options = options
        self._pruner = None
        if options.setup:
            resolve_setup(options.setup)()

    def pruner(self):
        """This worker's Pruner, built on first use: one for every domain (a document's domain is given per call),
        so the rules, the tokenizer and a model scorer load once."""
        if self._pruner is None:
            o = self.options
            self._pruner = Pruner(domain=o.domain, rules=load_rule_files(o.rules), tokenizer=o.tokenizer,
                                  scorer=o.scorer, gap_marker=o.gap_marker, cue_window_tokens=o.cue_window_tokens,
                                  scorer_options=o.scorer_options or None)
        return self._pruner

    def prune(self, item: Item) -> dict:
        """One row for one item; never raises for a bad document."""
        if item.error is not None:
            return error_row(item.id, item.error)
        o = self.options
        try:
            if item.text is not None:  # a JSONL or Parquet record's text
                text, encoding, decoded = item.text, None, None
            else:
                decoded = read_input(item.path, encoding=o.encoding, max_bytes=o.max_bytes)
                text, encoding = decoded.text, decoded.encoding
            ov = item.overrides
            budget, ratio = (ov.get("budget"), ov.get("ratio")) if ("budget" in ov or "ratio" in ov) \
                else (o.budget, o.ratio)
            result = self.pruner().prune(text, budget=budget, ratio=ratio, question=ov.get("question", o.question),
                                         encoding=encoding, domain=ov.get("domain"))
        except CatpError as exc:  # a record's error names its line or row, as its reading errors do
            return error_row(item.id, f"{item.where}: {exc}" if item.where else str(exc))
        except MemoryError:
            return error_row(item.id, "out of memory while pruning this document")
        except Exception as exc:  # a bug must not lose the row (or the batch)
            return error_row(item.id, f"internal error: {type(exc).__name__}: {exc}")
        if decoded is not None:
            with_input(result, decoded)
        data = result.model_dump()
        return {"id": item.id, "text": data["text"], "kept": data["kept"], "stats": data["stats"],
                "warnings": data["warnings"], "error": None}


def resolve_setup(target: str):
    """The function a `--setup MODULE:FUNCTION` names (FUNCTION defaults to `setup`); a CatpError when it
    cannot be imported."""
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr or "setup")
    except (ImportError, AttributeError) as exc:
        raise CatpError(f"batch setup {target!r} cannot be loaded: {exc}") from exc


def error_row(doc_id, message: str) -> dict:
    return {"id": doc_id, "text": None, "kept": None, "stats": None, "warnings": [], "error": message}


_WORKER: list[Worker] = []  # this process's Worker, in a pool worker


def init_worker(options: BatchOptions, pooled: bool = False) -> None:
    """A pool worker process's initializer: its one Worker."""
    _WORKER[:] = [Worker(options, pooled)]


def prune_item(item: Item) -> dict:
    """One row for one item, by this process's Worker (what the pool's workers run)."""
    return _WORKER[0].prune(item)
