"""The local engine: rows in input order, pruned in this process (jobs=1) or in a process pool.

A worker that dies (crash, out of memory) is replaced; the rows it held are retried one at a time, and the
row that kills a worker twice becomes an error row. A row is never lost.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from catp.batch.options import BatchOptions, BatchSummary
from catp.batch.readers import Item
from catp.batch.worker import Worker, error_row, init_worker, prune_item, resolve_setup


def prune_rows(items: Iterable[Item], options: BatchOptions, *, jobs: int = 1,
               summary: BatchSummary | None = None) -> Iterator[dict]:
    """Rows in input order. jobs=1 prunes in this process; more uses a process pool."""
    if jobs <= 1:
        worker = Worker(options)
        for item in items:
            yield worker.prune(item)
        return
    if options.setup:  # fail here, once, rather than in every worker
        resolve_setup(options.setup)
    yield from _pool_rows(items, options, jobs, summary)


def _pool_rows(items: Iterable[Item], options: BatchOptions, jobs: int,
               summary: BatchSummary | None) -> Iterator[dict]:
    context = multiprocessing.get_context("spawn")  # no fork of a process holding tokenizer threads

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(jobs, mp_context=context, initializer=init_worker, initargs=(options, True))

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
