"""Prune many documents: files, folders, JSONL or Parquet (one document per row), into JSONL or Parquet.

    from catp.batch import BatchOptions, run_batch
    summary = run_batch(["contracts/", "more.jsonl"], "out.jsonl", BatchOptions(ratio="1/6"), jobs=2)
    run_batch(["corpus/"], "out.parquet", BatchOptions(ratio="1/6"), jobs=64, engine="ray", resume=True)

Every input document gives exactly one output row, in input order:

    {"id": ..., "text": <pruned text>, "kept": [{"start", "end", "reasons"}], "stats": {...},
     "warnings": [...], "error": null}

and a document that cannot be read or pruned gives an error row instead (`text`, `kept`, `stats` null,
`error` the message); a row is never lost. Each worker holds one `Worker` (a `Pruner` per domain: rules,
tokenizer, taggers loaded once per worker; the user's rule files parsed once, by run_batch, and handed to the
workers loaded) whose `prune` turns one Item into one row. engine "local":
with `jobs` > 1 in a process pool; a worker that dies (crash, out of memory) is replaced, the rows it
held are retried one at a time, and the row that kills a worker twice becomes an error row. engine
"ray": Ray Data actors calling the same `Worker.prune` (catp/batch_ray.py), so the rows are identical.
Output and `resume` (skip the ids already written, append the rest): catp/batch_output.py.

JSONL rows: the text is in `text` and the id in `id` (both field names configurable; a missing id
becomes `FILE:LINE`). Parquet: the same, as columns (a missing id becomes `FILE:ROW`, 1-based). A row
may carry its own `budget` or `ratio` (replacing the batch's), `question` and `domain`. Text files are
read and decoded (encoding detection) by the worker.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet", ".pq")
ROW_KEYS = ("id", "text", "kept", "stats", "warnings", "error")


@dataclass
class BatchOptions:
    """What every worker's Pruner is built with, and the batch-wide budget and reading options."""

    budget: int | None = None
    ratio: str | float | None = None
    question: str | None = None
    domain: str = "auto"
    rules: list = field(default_factory=list)  # paths, or files already loaded (catp.rules.loader.load_file)
    tokenizer: str | None = None
    scorer: str = "lexical"
    scorer_options: dict = field(default_factory=dict)
    gap_marker: str = " … "
    cue_window_tokens: int | None = None
    encoding: str | None = None
    max_bytes: int = 200 * 1024 * 1024
    text_field: str = "text"
    id_field: str = "id"
    glob: str | None = None  # a folder's files to read; None: DOCUMENT_SUFFIXES
    setup: str | None = None  # "module:function" run once in each worker first (register scorers, matchers)


@dataclass
class Item:
    """One input document: text (JSONL) or a path (text file) for the worker, or a reading error."""

    index: int
    id: object
    text: str | None = None
    path: str | None = None
    overrides: dict = field(default_factory=dict)
    error: str | None = None
    where: str | None = None  # FILE:LINE or FILE:ROW of a record, for its pruning errors


@dataclass
class BatchSummary:
    rows: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    elapsed_s: float = 0.0
    jobs: int = 1
    worker_restarts: int = 0
    skipped: int = 0  # rows already in the output (resume)
    engine: str = "local"
    unmatched: int = 0  # resume: rows in the output that no input row accounts for (duplicated, or other inputs)

    @property
    def ok(self) -> int:
        return self.rows - self.errors

    def line(self, where: str) -> str:
        """The one-line summary `catp batch` prints on stderr."""
        secs = self.elapsed_s or float("nan")
        skipped = f", {self.skipped} skipped (already written)" if self.skipped else ""
        if self.unmatched:
            skipped += (f"; the output holds {self.unmatched} more rows than these inputs have ids for "
                        "(duplicated by two runs, or rows of other inputs): check it")
        return (f"catp: {self.rows} rows ({self.ok} ok, {self.errors} errors{skipped}) -> {where} in "
                f"{self.elapsed_s:.1f}s: {self.rows / secs:.2f} docs/s, {self.input_tokens:,} -> "
                f"{self.output_tokens:,} tokens ({self.input_tokens / secs:,.0f} input tokens/s), "
                f"{self.jobs} jobs, engine {self.engine}")


class Terminated(KeyboardInterrupt):
    """SIGTERM during `run_batch`: handled as Ctrl-C is, but the exit code is 143 (128 + SIGTERM)."""


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during `run_batch`: the output was closed whole (every row written is complete);
    `summary` counts the rows written; `terminated` says it was SIGTERM."""

    def __init__(self, summary: BatchSummary, terminated: bool = False) -> None:
        super().__init__()
        self.summary = summary
        self.terminated = terminated


# -- reading ---------------------------------------------------------------------------------


# what a folder gives by default: text, Markdown, PDF, DOCX, HTML, and JSONL or Parquet (a document a row)
DOCUMENT_SUFFIXES = (".txt", ".text", ".md", ".markdown", ".pdf", ".docx", ".html", ".htm", ".xhtml",
                     *JSONL_SUFFIXES, *PARQUET_SUFFIXES)


class InFolder(str):
    """A path found in a folder (not named by the user): one that is not a regular file (a broken link, a link
    to a device, a FIFO) is an error row, never read."""


def folder_files(folder: Path, glob: str | None = None, exclude: str | None = None) -> list[Path]:
    """The files of `folder` to read, sorted: recursive, hidden files and folders skipped, those matching
    `glob` (None: those with a DOCUMENT_SUFFIXES suffix), every entry but folders (a broken link is one too,
    and gets its error row), and not `exclude` (the output, a real path) nor anything inside it."""
    out = []
    for p in folder.rglob(glob or "*"):
        if any(part.startswith(".") for part in p.relative_to(folder).parts) or p.is_dir():
            continue
        if glob is None and p.suffix.lower() not in DOCUMENT_SUFFIXES:
            continue
        if exclude is not None:
            real = os.path.realpath(p)
            if real == exclude or real.startswith(exclude.rstrip(os.sep) + os.sep):
                continue
        out.append(p)
    return sorted(out)


def expand_inputs(inputs: Iterable[str | Path], glob: str | None = None, output=None) -> list[str]:
    """Files in the order given; a folder becomes its files (`folder_files`: `glob`, else the document types;
    the output, when it lies inside the folder, left out: it is written, not read). '-' (stdin, JSONL) and
    missing paths are kept as they are."""
    exclude = None
    if isinstance(output, (str, Path)) and str(output) != "-":
        exclude = os.path.realpath(output)
    out: list[str] = []
    for raw in inputs:
        name = str(raw)
        path = Path(name)
        if name != "-" and path.is_dir():
            out.extend(InFolder(p) for p in folder_files(path, glob, exclude))
        else:
            out.append(name)
    return out


def _not_a_file(name: str) -> str | None:
    """Why a path found in a folder, or a link, cannot be read as a document; None when it can be tried (a
    FIFO named by the user, /dev/fd/63 of a shell's <(...), is read)."""
    import stat

    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        if os.path.islink(name):
            return f"{name}: a broken link (its target {os.readlink(name)!r} does not exist)"
        return None
    except OSError:
        return None  # the reader says why
    if stat.S_ISREG(mode):
        return None
    device = stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
    if isinstance(name, InFolder) or device:
        kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
                else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        return f"{name}: {kind}, not a document file; left unread"
    return None


def _check_output_is_not_an_input(output, sources: list[str]) -> None:
    """Writing starts by emptying the output: were it one of the inputs (or a Parquet output folder
    holding one), the input would be gone before it is read."""
    if not isinstance(output, (str, Path)) or str(output) == "-":
        return
    target = os.path.realpath(output)
    inside = target.rstrip(os.sep) + os.sep
    for name in sources:
        path = "" if name == "-" else os.path.realpath(name)
        if path == target or path.startswith(inside):
            from catp.errors import CatpError

            raise CatpError(f"{output}: the output is also an input ({name}); write it elsewhere")


def is_jsonl(name: str) -> bool:
    return name == "-" or name.lower().endswith(JSONL_SUFFIXES)


COUNT_MAX_BYTES = 1 << 30  # JSONL inputs larger than this together are not counted first (a bar without total)


def count_documents(sources: list[str]) -> int | None:
    """How many rows the sources will give (JSONL: non-blank lines; Parquet: from its footer), or None
    when stdin is read or the JSONL inputs hold more than COUNT_MAX_BYTES (counting would read them all
    once more before pruning starts)."""
    try:
        if sum(os.path.getsize(n) for n in sources if n != "-" and is_jsonl(n)) > COUNT_MAX_BYTES:
            return None
    except OSError:
        pass  # a missing file: counted below as one error row
    total = 0
    for name in sources:
        if name == "-":
            return None
        if is_parquet(name):
            try:
                total += parquet_rows(name)
            except UNREADABLE_PARQUET:
                total += 1  # one error row
            continue
        if not is_jsonl(name):
            total += 1
            continue
        try:
            with open(name, "rb") as fh:
                total += sum(1 for line in fh if line.strip())
        except OSError:
            total += 1  # it will be one error row
    return total


def iter_items(sources: list[str], options: BatchOptions) -> Iterator[Item]:
    index = 0
    for name in sources:
        if is_parquet(name):
            for item in _parquet_items(name, options, index):
                yield item
                index += 1
            continue
        if not is_jsonl(name):
            problem = _not_a_file(name) if isinstance(name, InFolder) or os.path.islink(name) else None
            yield Item(index, str(name), path=str(name), error=problem)
            index += 1
            continue
        for item in _jsonl_items(name, options, index):
            yield item
            index += 1


def _jsonl_items(name: str, options: BatchOptions, first_index: int) -> Iterator[Item]:
    index = first_index
    try:
        fh = sys.stdin.buffer if name == "-" else open(name, "rb")
    except OSError as exc:
        yield Item(index, name, error=f"{name}: cannot open: {exc.strerror or exc}")
        return
    label = "<stdin>" if name == "-" else name
    try:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            yield _jsonl_item(raw, f"{label}:{lineno}", options, index)
            index += 1
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def _jsonl_item(raw: bytes, where: str, options: BatchOptions, index: int) -> Item:
    try:
        row = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return Item(index, where, error=f"{where}: not a JSON line ({exc})")
    if not isinstance(row, dict):
        return Item(index, where, error=f"{where}: a line must be a JSON object with a {options.text_field!r} field")
    return record_item(row, where, options, index)


def record_item(row: dict, where: str, options: BatchOptions, index: int = 0) -> Item:
    """One Item from one input record (a JSONL object or a Parquet row, as Python values): the text,
    the id (else `where`), and the row's own budget/ratio/question/domain. Both engines use this."""
    doc_id = row.get(options.id_field)
    if doc_id is None:
        doc_id = where
    elif not isinstance(doc_id, (str, int, float, bool)):
        doc_id = str(doc_id)  # a Parquet date or decimal: written as text
    text = row.get(options.text_field)
    if not isinstance(text, str):
        what = "missing" if text is None else f"of type {type(text).__name__}, not a string"
        return Item(index, doc_id, error=f"{where}: field {options.text_field!r} is {what}")
    overrides = {k: row[k] for k in ("budget", "ratio", "question", "domain") if row.get(k) is not None}
    return Item(index, doc_id, text=text, overrides=overrides, where=where)


def is_parquet(name: str) -> bool:
    return name.lower().endswith(PARQUET_SUFFIXES)


# A Parquet file that cannot be opened (missing: OSError; not Parquet or corrupt: pyarrow's ArrowInvalid,
# a ValueError) gives one error row.
UNREADABLE_PARQUET = (OSError, ValueError)


def require_pyarrow():
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet as pq
    except ImportError:
        from catp.errors import CatpError

        raise CatpError("Parquet input or output needs pyarrow: pip install 'catp[parquet]'") from None
    return pq


def parquet_rows(name: str) -> int:
    return require_pyarrow().ParquetFile(name).metadata.num_rows


def parquet_columns(name: str, options: BatchOptions) -> list[str]:
    """The columns to read from a Parquet file: text, id and the per-row overrides it has."""
    names = require_pyarrow().read_schema(name).names
    if options.text_field not in names:
        from catp.errors import CatpError

        raise CatpError(f"{name}: no column {options.text_field!r} (name the text column with --text-field)")
    return [c for c in (options.id_field, options.text_field, "budget", "ratio", "question", "domain")
            if c in names]


def _parquet_items(name: str, options: BatchOptions, first_index: int) -> Iterator[Item]:
    """Rows of a Parquet file (read in batches, as Python values); a row without an id gets `FILE:ROW`
    (1-based, as JSONL's `FILE:LINE`)."""
    pq = require_pyarrow()
    index = first_index
    try:
        columns = parquet_columns(name, options)
        reader = pq.ParquetFile(name)
    except UNREADABLE_PARQUET as exc:
        yield Item(index, name, error=f"{name}: cannot open: {exc}")
        return
    for batch in reader.iter_batches(batch_size=256, columns=columns):
        for row in batch.to_pylist():
            yield record_item(row, f"{name}:{index - first_index + 1}", options, index)
            index += 1


# -- pruning (one Worker per process: the pool's workers, a Ray actor, or this process) --------


class Worker:
    """Prunes Items into rows. Holds one Pruner per domain, built on first use, so rules, tokenizer and
    taggers load once per worker, never per document. The local pool and the Ray actor both call
    `prune`, which is what makes their rows identical."""

    def __init__(self, options: BatchOptions, pooled: bool = False):
        if pooled:  # one document per core already: no tokenizer threads on top (a user's setting wins)
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.options = options
        self.pruners: dict = {}
        self.rules: list | None = None  # the rule files, loaded once for every domain's Pruner
        if options.setup:
            _resolve_setup(options.setup)()

    def pruner(self, domain: str):
        if domain not in self.pruners:
            from catp.pipeline import Pruner

            o = self.options
            if self.rules is None:  # run_batch hands them loaded; a path given here is read once (else error rows)
                from catp.rules.loader import load_rule_files

                self.rules = load_rule_files(o.rules)
            self.pruners[domain] = Pruner(domain=domain, rules=self.rules, tokenizer=o.tokenizer, scorer=o.scorer,
                                          gap_marker=o.gap_marker, cue_window_tokens=o.cue_window_tokens,
                                          scorer_options=o.scorer_options or None)
        return self.pruners[domain]

    def prune(self, item: Item) -> dict:
        """One row for one item; never raises for a bad document."""
        if item.error is not None:
            return error_row(item.id, item.error)
        from catp.errors import CatpError

        o = self.options
        try:
            if item.text is not None:  # a JSONL or Parquet record's text
                text, encoding, decoded = item.text, None, None
            else:
                from catp.decode import read_input

                decoded = read_input(item.path, encoding=o.encoding, max_bytes=o.max_bytes)
                text, encoding = decoded.text, decoded.encoding
            ov = item.overrides
            budget, ratio = (ov.get("budget"), ov.get("ratio")) if ("budget" in ov or "ratio" in ov) \
                else (o.budget, o.ratio)
            result = self.pruner(str(ov.get("domain") or o.domain)).prune(
                text, budget=budget, ratio=ratio, question=ov.get("question", o.question), encoding=encoding)
        except CatpError as exc:  # a record's error names its line or row, as its reading errors do
            return error_row(item.id, f"{item.where}: {exc}" if item.where else str(exc))
        except MemoryError:
            return error_row(item.id, "out of memory while pruning this document")
        except Exception as exc:  # a bug must not lose the row (or the batch)
            return error_row(item.id, f"internal error: {type(exc).__name__}: {exc}")
        if decoded is not None:
            from catp.pipeline import with_input

            with_input(result, decoded)
        data = result.model_dump()
        return {"id": item.id, "text": data["text"], "kept": data["kept"], "stats": data["stats"],
                "warnings": data["warnings"], "error": None}


_WORKER: list[Worker] = []  # this process's Worker, in a pool worker or with jobs=1


def _init_worker(options: BatchOptions, pooled: bool = False) -> None:
    _WORKER[:] = [Worker(options, pooled)]


def _resolve_setup(target: str):
    import importlib

    from catp.errors import CatpError

    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr or "setup")
    except (ImportError, AttributeError) as exc:
        raise CatpError(f"batch setup {target!r} cannot be loaded: {exc}") from exc


def error_row(doc_id, message: str) -> dict:
    return {"id": doc_id, "text": None, "kept": None, "stats": None, "warnings": [], "error": message}


def prune_item(item: Item) -> dict:
    """One row for one item, by this process's Worker (what the pool's workers run)."""
    return _WORKER[0].prune(item)


# -- running -----------------------------------------------------------------------------------


def prune_rows(items: Iterable[Item], options: BatchOptions, *, jobs: int = 1,
               summary: BatchSummary | None = None) -> Iterator[dict]:
    """Rows in input order. jobs=1 prunes in this process; more uses a process pool."""
    if jobs <= 1:
        worker = Worker(options)
        for item in items:
            yield worker.prune(item)
        return
    if options.setup:  # fail here, once, rather than in every worker
        _resolve_setup(options.setup)
    yield from _pool_rows(items, options, jobs, summary)


def _pool_rows(items: Iterable[Item], options: BatchOptions, jobs: int,
               summary: BatchSummary | None) -> Iterator[dict]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")  # no fork of a process holding tokenizer threads

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker, initargs=(options, True))

    source = iter(items)
    window = jobs * 4  # rows in flight
    ahead = jobs * 32  # rows finished but waiting for an earlier one
    retry: deque[tuple[Item, int]] = deque()  # after a worker died: one at a time
    inflight: dict = {}
    done_rows: dict[int, dict] = {}
    next_out = 0
    next_in = 0
    exhausted = False
    pool = new_pool()
    try:
        while True:
            while True:  # fill
                if retry:
                    if inflight:
                        break
                    item, attempts = retry.popleft()
                elif exhausted or len(inflight) >= window or next_in - next_out >= ahead:
                    break
                else:
                    item = next(source, None)
                    if item is None:
                        exhausted = True
                        break
                    attempts = 0
                    next_in = item.index + 1
                if item.error is not None:
                    done_rows[item.index] = error_row(item.id, item.error)
                    continue
                inflight[pool.submit(prune_item, item)] = (item, attempts)
                if retry:
                    break
            while next_out in done_rows:
                yield done_rows.pop(next_out)
                next_out += 1
            if not inflight:
                if exhausted and not retry:
                    break
                continue
            finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
            broken = False
            for future in finished:
                item, attempts = inflight.pop(future)
                try:
                    done_rows[item.index] = future.result()
                except BrokenProcessPool:
                    broken = True
                    if attempts >= 1:
                        done_rows[item.index] = error_row(
                            item.id, "the worker process died while pruning this document (crash or out of memory)")
                    else:
                        retry.append((item, attempts + 1))
                except Exception as exc:  # pickling problems and the like
                    done_rows[item.index] = error_row(item.id, f"internal error: {type(exc).__name__}: {exc}")
            if broken:
                for future, (item, attempts) in list(inflight.items()):  # they died with it
                    retry.append((item, attempts + 1))
                inflight.clear()
                pool.shutdown(wait=False, cancel_futures=True)
                pool = new_pool()
                if summary is not None:
                    summary.worker_restarts += 1
                retry = deque(sorted(retry, key=lambda pair: pair[0].index))
            while next_out in done_rows:
                yield done_rows.pop(next_out)
                next_out += 1
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_batch(inputs: Iterable[str | Path], output: str | Path | IO[str], options: BatchOptions | None = None, *,
              jobs: int = 1, progress: bool = True, engine: str = "local", address: str | None = None,
              resume: bool = False, rows_per_file: int = 1000) -> BatchSummary:
    """Prune every document of `inputs` into `output`: JSONL ('-' or a text stream: written there; any
    other path: a file) or Parquet (a path ending in .parquet: a folder of part files).

    engine "local" prunes here (jobs=1) or in a process pool; "ray" on Ray Data actors (`address`:
    None starts a local Ray, else "auto" or "ray://HOST:PORT"). With `resume`, rows whose id is
    already in the output are skipped and the others appended (see catp.batch_output). Ctrl-C or SIGTERM
    raises BatchInterrupted (a KeyboardInterrupt) once the rows written so far are closed whole."""
    from catp.batch_output import id_key, open_output
    from catp.errors import CatpError

    options = options or BatchOptions()
    if engine not in ("local", "ray"):
        raise CatpError(f"unknown engine {engine!r}: use local or ray")
    # each rule file parsed once, here: a bad one is one error before anything is written, and every worker's
    # Pruners (one per domain) get the files loaded (a LoadedRuleSet pickles in a fraction of a parse's time)
    from catp.rules.loader import load_rule_files

    options = replace(options, rules=load_rule_files(options.rules))
    sources = expand_inputs(inputs, options.glob, output)
    if engine == "ray":
        from catp import batch_ray

        batch_ray.require_ray()  # a one-line error before anything is written
        if "-" in sources:
            raise CatpError("--engine ray cannot read stdin: give files or folders")
    _check_output_is_not_an_input(output, sources)
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
    bar = _progress(count_documents(sources)) if progress else None

    def skipped(item: Item) -> bool:
        key = id_key(item.id) if done else None
        if done.get(key):
            done[key] -= 1
            summary.skipped += 1
            if bar is not None:
                bar[0].update(bar[1], advance=1)
            return True
        return False

    stop = _StopSignals()
    try:
        stop.install()
        if engine == "ray":
            rows = batch_ray.ray_rows(sources, options, jobs=jobs, address=address, done=frozenset(done))
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
                bar[0].update(bar[1], advance=1, errors=summary.errors)
    except KeyboardInterrupt as exc:
        interrupted = exc
    else:
        interrupted = None
    finally:
        stop.holding = True  # a second signal does not cut the closing short
        if bar is not None:
            bar[0].stop()
        writer.close()
        stop.restore()
    summary.elapsed_s = time.perf_counter() - started
    if engine == "local" and interrupted is None:
        summary.unmatched = sum(n for n in done.values() if n > 0)
    if interrupted is not None:
        raise BatchInterrupted(summary, terminated=isinstance(interrupted, Terminated)) from None
    return summary


class _StopSignals:
    """While a batch runs: SIGTERM (kill, a supervisor stopping it) stops it as Ctrl-C does, by a
    KeyboardInterrupt (`Terminated`, for its exit code); either signal that comes while `holding` (a row
    being written) waits for `release`. Only in the main thread, and only for signals whose handler is
    Python's default."""

    def __init__(self) -> None:
        self.holding = False
        self.pending: KeyboardInterrupt | None = None
        self.saved: dict = {}

    def install(self) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return
        for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
            if signal.getsignal(sig) is default:
                self.saved[sig] = default
                signal.signal(sig, self._on_signal)

    def restore(self) -> None:
        import signal

        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.saved = {}

    def _on_signal(self, signum, frame) -> None:
        import signal

        stop = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        if self.holding:
            self.pending = self.pending or stop
        else:
            raise stop

    def release(self) -> None:
        self.holding = False
        if self.pending is not None:
            raise self.pending


def _progress(total: int | None):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    console = Console(stderr=True)  # a bar only on a terminal: a log file gets the summary line alone
    progress = Progress(TextColumn("pruning"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[errors]} errors"), TimeElapsedColumn(), TimeRemainingColumn(),
                        console=console, transient=False, disable=not console.is_terminal)
    task = progress.add_task("pruning", total=total, errors=0)
    progress.start()
    return progress, task
