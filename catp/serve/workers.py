"""Pruning off the event loop: a process pool of --workers processes, each holding its loaded Pruners, behind a
bounded queue. Past the queue the gateway answers 429 with Retry-After instead of waiting."""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from catp.serve import plan
from catp.serve.errors import ApiError


class PrunePool:
    def __init__(self, workers: int, queue_size: int, settings: dict[str, Any], retry_after_s: int = 1) -> None:
        self.workers, self.capacity = workers, workers + queue_size
        self.retry_after_s = retry_after_s
        self.pending = 0
        # spawn: a fresh interpreter per worker, nothing inherited from the event loop's threads
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=plan.init_worker, initargs=(settings,))

    async def warm(self) -> None:
        """Start every worker and load its Pruner before the gateway says it is ready."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._pool, plan.ping) for _ in range(self.workers)))

    async def run(self, job: dict[str, Any]) -> dict[str, Any]:
        if self.pending >= self.capacity:
            raise ApiError(429, f"the pruning queue is full ({self.capacity} requests); retry later",
                           code="queue_full", headers={"Retry-After": str(self.retry_after_s)})
        self.pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, plan.plan, job)
        finally:
            self.pending -= 1

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
