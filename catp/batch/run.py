"""`run_batch`: read the inputs, prune them on an engine (local pool or Ray), write the rows, report.

Every input document gives exactly one output row, in input order:

    {"id": ..., "text": <pruned text>, "kept": [{"start", "end", "reasons"}], "stats": {...},
     "warnings": [...], "error": null}

and a document that cannot be read or pruned gives an error row instead; a row is never lost.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import IO

from catp.batch import ray as ray_engine
from catp.batch.options import BatchOptions, BatchSummary
from catp.batch.output import id_key, open_output
from catp.batch.pool import prune_rows
from catp.batch.progress import ProgressBar
from catp.batch.readers import (
    UNREADABLE_PARQUET,
    Item,
    check_output_is_not_an_input,
    count_documents,
    expand_inputs,
    is_parquet,
    iter_items,
    parquet_columns,
)
from catp.batch.signals import BatchInterrupted, StopSignals, Terminated
from catp.errors import CatpError
from catp.rules.loader import load_rule_files


def run_batch(inputs: Iterable[str | Path], output: str | Path | IO[str], options: BatchOptions | None = None, *,
              jobs: int = 1, progress: bool = True, engine: str = "local", address: str | None = None,
              resume: bool = False, rows_per_file: int = 1000) -> BatchSummary:
    """Prune every document of `inputs` into `output`: JSONL ('-' or a text stream: written there; any
    other path: a file) or Parquet (a path ending in .parquet: a folder of part files).

    engine "local" prunes here (jobs=1) or in a process pool; "ray" on Ray Data actors (`address`:
    None starts a local Ray, else "auto" or "ray://HOST:PORT"). With `resume`, rows whose id is
    already in the output are skipped and the others appended (see catp.batch.output). Ctrl-C or SIGTERM
    raises BatchInterrupted (a KeyboardInterrupt) once the rows written so far are closed whole."""
    options = options or BatchOptions()
    if engine not in ("local", "ray"):
        raise CatpError(f"unknown engine {engine!r}: use local or ray")
    # each rule file parsed once, here: a bad one is one error before anything is written, and every worker's
    # Pruners (one per domain) get the files loaded (a LoadedRuleSet pickles in a fraction of a parse's time)
    options = replace(options, rules=load_rule_files(options.rules))
    sources = expand_inputs(inputs, options.glob, output)
    if engine == "ray":
        ray_engine.require_ray()  # a one-line error before anything is written
        if "-" in sources:
            raise CatpError("--engine ray cannot read stdin: give files or folders")
    check_output_is_not_an_input(output, sources)
    for name in sources:  # a missing text column is one error, before anything is written (on either engine)
        if is_parquet(name):
            try:
                parquet_columns(name, options)
            except UNREADABLE_PARQUET:
                pass  # its error row comes from the reader
    summary = BatchSummary(jobs=max(jobs, 1), engine=engine)
    started = time.perf_counter()
    writer = open_output(output, resume=resume, rows_per_file=rows_per_file)
    done = writer.done  # id key -> rows written: the first that many input rows with that id are skipped
    bar = ProgressBar(count_documents(sources)) if progress else None

    def skipped(item: Item) -> bool:
        key = id_key(item.id) if done else None
        if done.get(key):
            done[key] -= 1
            summary.skipped += 1
            if bar is not None:
                bar.advance()
            return True
        return False

    stop = StopSignals()
    try:
        stop.install()
        if engine == "ray":
            rows = ray_engine.ray_rows(sources, options, jobs=jobs, address=address, done=frozenset(done))
        else:
            items = (item for item in iter_items(sources, options) if not skipped(item))
            # the pool orders rows by a contiguous index: number the items left after skipping
            items = (replace(item, index=n) for n, item in enumerate(items))
            rows = prune_rows(items, options, jobs=jobs, summary=summary)
        for row in rows:
            stop.holding = True  # a row is written and counted whole, or not at all
            if row is None:  # the ray engine's mark for a row skipped on resume
                summary.skipped += 1
            else:
                writer.write(row)
                summary.rows += 1
                if row["error"] is not None:
                    summary.errors += 1
                else:
                    summary.input_tokens += row["stats"]["input_tokens"]
                    summary.output_tokens += row["stats"]["output_tokens"]
            stop.release()
            if bar is not None:
                bar.advance(errors=summary.errors)
    except KeyboardInterrupt as exc:
        interrupted = exc
    else:
        interrupted = None
    finally:
        stop.holding = True  # a second signal does not cut the closing short
        if bar is not None:
            bar.stop()
        writer.close()
        stop.restore()
    summary.elapsed_s = time.perf_counter() - started
    if engine == "local" and interrupted is None:
        summary.unmatched = sum(n for n in done.values() if n > 0)
    if interrupted is not None:
        raise BatchInterrupted(summary, terminated=isinstance(interrupted, Terminated)) from None
    return summary
