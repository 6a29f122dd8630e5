"""Ctrl-C and SIGTERM during a batch: the run stops between rows, so the output is closed whole."""

from __future__ import annotations

import signal
import threading


class Terminated(KeyboardInterrupt):
    """SIGTERM during `run_batch`: handled as Ctrl-C is, but the exit code is 143 (128 + SIGTERM)."""


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during `run_batch`: the output was closed whole (every row written is complete);
    `summary` (a BatchSummary) counts the rows written; `terminated` says it was SIGTERM."""

    def __init__(self, summary, terminated: bool = False) -> None:
        super().__init__()
        self.summary = summary
        self.terminated = terminated


class StopSignals:
    """While a batch runs: SIGTERM (kill, a supervisor stopping it) stops it as Ctrl-C does, by a
    KeyboardInterrupt (`Terminated`, for its exit code); either signal that comes while `holding` (a row
    being written) waits for `release`. Only in the main thread, and only for signals whose handler is
    Python's default."""

    def __init__(self) -> None:
        self.holding = False
        self.pending: KeyboardInterrupt | None = None
        self.saved: dict = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
            if signal.getsignal(sig) is default:
                self.saved[sig] = default
                signal.signal(sig, self._on_signal)

    def restore(self) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.saved = {}

    def _on_signal(self, signum, frame) -> None:
        stop = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        if self.holding:
            self.pending = self.pending or stop
        else:
            raise stop

    def release(self) -> None:
        self.holding = False
        if self.pending is not None:
            raise self.pending
