"""Prune many documents: files, folders, JSONL or Parquet (one document per row), into JSONL or Parquet.

    from catp.batch import BatchOptions, run_batch
    summary = run_batch(["contracts/", "more.jsonl"], "out.jsonl", BatchOptions(ratio="1/6"), jobs=2)
    run_batch(["corpus/"], "out.parquet", BatchOptions(ratio="1/6"), jobs=64, engine="ray", resume=True)

Every input document gives exactly one output row, in input order:

    {"id": ..., "text": <pruned text>, "kept": [{"start", "end", "reasons"}], "stats": {...},
     "warnings": [...], "error": null}

and a document that cannot be read or pruned gives an error row instead (`text`, `kept`, `stats` null,
`error` the message); a row is never lost. The modules, each importing only those above it:

    options   BatchOptions (what every worker's Pruner is built with), BatchSummary
    readers   inputs -> Items: folders, text files, JSONL lines, Parquet rows; ids, per-row overrides
    worker    Worker: one Item -> one row (one Pruner for every domain, `Worker.pruner`); the --setup hook
    output    JSONL and Parquet writers, the lock on the output, `resume` (the ids already written)
    pool      the local engine: this process, or a process pool that survives a dying worker
    ray       the Ray engine: Ray Data actors calling the same `Worker.prune` (so the rows are identical)
    signals   Ctrl-C and SIGTERM: the output is closed whole
    progress  the progress bar on stderr
    run       run_batch: reads, prunes on an engine, writes, and sums up

Users import from `catp.batch` (the names below); the CLI (catp/commands/batch.py) too.
"""

from __future__ import annotations

from catp.batch.options import BatchOptions, BatchSummary
from catp.batch.output import id_key, open_output, read_rows
from catp.batch.pool import prune_rows
from catp.batch.readers import (
    DOCUMENT_SUFFIXES,
    JSONL_SUFFIXES,
    PARQUET_SUFFIXES,
    Item,
    count_documents,
    expand_inputs,
    folder_files,
    is_jsonl,
    is_parquet,
    iter_items,
    record_item,
)
from catp.batch.run import run_batch
from catp.batch.signals import BatchInterrupted, Terminated
from catp.batch.worker import ROW_KEYS, Worker, error_row, resolve_setup

__all__ = [
    "DOCUMENT_SUFFIXES", "JSONL_SUFFIXES", "PARQUET_SUFFIXES", "ROW_KEYS", "BatchInterrupted", "BatchOptions",
    "BatchSummary", "Item", "Terminated", "Worker", "count_documents", "error_row", "expand_inputs",
    "folder_files", "id_key", "is_jsonl", "is_parquet", "iter_items", "open_output", "prune_rows", "read_rows",
    "record_item", "resolve_setup", "run_batch",
]
