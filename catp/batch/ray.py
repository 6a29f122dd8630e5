"""`catp batch --engine ray`: the same rows as the local engine, pruned on Ray Data actors.

    sources ─from_items─▶ one row per input file ─map_batches(read_source)─▶ Items (pickled)
            ─map_batches(RayPruner, ActorPoolStrategy(size=jobs))─▶ rows (pickled) ─▶ the driver writes

Each file is read by a Ray task with the same reader as the local engine (`catp.batch.readers.iter_items`:
JSONL lines, Parquet rows, a text file's path), so ids (`FILE:LINE` when missing), per-row overrides
and reading errors are those of the local engine. Ray Data's read_json/read_parquet are not used:
read_json fails the whole read on one malformed line and wants one Arrow type per column, and neither
gives the line or row number that a row without an id is named by; reading costs next to nothing
against pruning, so one reading task per file keeps up. Each actor holds one `catp.batch.worker.Worker`
(a Pruner per domain: rules and tokenizer load once per actor; the user's rule files come parsed) and
calls its `prune`, the function the local pool's workers call. The execution keeps input order (`preserve_order`), and the driver
writes the rows with the local engine's writer, so both engines give identical outputs.

Ray (optional: catp[ray]) is imported only here, and only when `--engine ray` runs.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Iterator

from catp.batch.options import BatchOptions
from catp.batch.output import id_key
from catp.batch.readers import iter_items
from catp.batch.worker import Worker, error_row, resolve_setup
from catp.errors import CatpError

BATCH_ROWS = 4  # documents per actor call at most: small, since one document takes 0.01-1 s
BLOCK_BYTES = 64 * 1024  # Ray Data block size for this job (its default, 128 MiB, would be one block per file)


def require_ray():
    try:
        import ray
        import ray.data
    except ImportError:
        raise CatpError("--engine ray needs Ray Data: pip install 'catp[ray]'") from None
    return ray


def read_source(batch, options: BatchOptions) -> Iterator:
    """Ray task: the Items of each input file of `batch`, pickled with a key that names the row
    (file and position), yielded BATCH_ROWS at a time."""
    import pyarrow as pa

    for name in batch.column("source").to_pylist():
        items = []
        for item in iter_items([name], options):
            items.append(pickle.dumps((f"{name}\0{item.index}", item)))
            if len(items) >= BATCH_ROWS:
                yield pa.table({"item": pa.array(items, pa.binary())})
                items = []
        if items:
            yield pa.table({"item": pa.array(items, pa.binary())})


class CrashLedger:
    """Ray actor (no CPU): which rows an actor started and did not finish. Ray Data restarts an actor
    that died and retries its call (by default without limit); a row started twice before without
    finishing has killed two actors, and its third start gives an error row, as in the local pool."""

    def __init__(self):
        self.unfinished: dict[str, int] = {}

    def start(self, key: str) -> int:
        """How many earlier starts of this row never finished."""
        before = self.unfinished.get(key, 0)
        self.unfinished[key] = before + 1
        return before

    def finish(self, key: str) -> None:
        self.unfinished.pop(key, None)


class RayPruner:
    """Ray actor: one Worker, built once; an Item whose id is in `done` gives an empty row (skipped)."""

    def __init__(self, options: BatchOptions, ledger, done: frozenset = frozenset()):
        self.worker = Worker(options, pooled=True)
        self.ledger = ledger
        self.done = done

    def __call__(self, batch):
        import pyarrow as pa
        import ray

        rows = []
        for blob in batch.column("item").to_pylist():
            key, item = pickle.loads(blob)
            if self.done and id_key(item.id) in self.done:
                rows.append(b"")
                continue
            if ray.get(self.ledger.start.remote(key)) >= 2:
                row = error_row(item.id, "the worker process died while pruning this document (crash or out of memory)")
            else:
                row = self.worker.prune(item)
            self.ledger.finish.remote(key)
            rows.append(pickle.dumps(row))
        return pa.table({"row": pa.array(rows, pa.binary())})


def ray_rows(sources: list[str], options: BatchOptions, *, jobs: int = 1, address: str | None = None,
             done: frozenset = frozenset()) -> Iterator[dict | None]:
    """Rows in input order, None for a row skipped because its id is in `done`. Uses the running Ray
    if there is one, else connects to `address` ("auto", "ray://HOST:PORT") or starts a local Ray
    with `jobs` CPUs (and shuts it down at the end)."""
    ray = require_ray()
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # no per-run notes under catp's progress bar
    if options.setup:  # fail here, once, rather than in every actor
        resolve_setup(options.setup)
    started_here = False
    if not ray.is_initialized():
        try:
            if address:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            else:
                ray.init(address="local", num_cpus=max(jobs, 1), include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING)  # "local": a new Ray, even with a cluster on this machine
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise CatpError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {exc}") from None
        started_here = True
    try:
        yield from _run(ray, sources, options, jobs, done)
    finally:
        if started_here:
            ray.shutdown()


def _run(ray, sources: list[str], options: BatchOptions, jobs: int, done: frozenset) -> Iterator[dict | None]:
    from ray.data import ActorPoolStrategy, DataContext

    if not sources:
        return
    context = DataContext.get_current()
    saved = (context.execution_options.preserve_order, context.enable_progress_bars,
             context.print_on_execution_start, context.target_max_block_size)
    # A Dataset keeps the settings current when it is made; the caller's are put back right after.
    context.execution_options.preserve_order = True  # rows in input order, as the local engine writes them
    context.enable_progress_bars = False  # catp draws its own
    context.print_on_execution_start = False
    # Ray Data gives an actor whole blocks, so blocks must be small for the work to spread over the
    # actors: a 32K-token document is one block of its own, 2K-character ones go about 30 to a block.
    context.target_max_block_size = BLOCK_BYTES
    ledger = ray.remote(num_cpus=0)(CrashLedger).remote()
    try:
        ds = ray.data.from_items([{"source": name} for name in sources], override_num_blocks=len(sources))
        # Reading is cheap and must not wait for a CPU that a pruning actor holds.
        ds = ds.map_batches(read_source, batch_size=1, batch_format="pyarrow", fn_kwargs={"options": options},
                            num_cpus=0)
        ds = ds.map_batches(RayPruner, batch_size=BATCH_ROWS, batch_format="pyarrow",
                            fn_constructor_kwargs={"options": options, "ledger": ledger, "done": done},
                            compute=ActorPoolStrategy(size=max(jobs, 1)), num_cpus=1)
    finally:
        (context.execution_options.preserve_order, context.enable_progress_bars,
         context.print_on_execution_start, context.target_max_block_size) = saved
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        for blob in batch.column("row").to_pylist():
            yield pickle.loads(blob) if blob else None
