"""The guard against runaway patterns: a rule's scans stop after `timeout` CPU seconds (TimeoutError).

`regex`'s own `timeout=` reads the clock as it scans and at every match: 20-40% of a scan's time.
In the main thread of a Unix process where no other thread prunes the guard is instead one CPU timer
(ITIMER_VIRTUAL) armed around all of a rule's scans: `regex` checks for signals as it scans, so the
timer's signal stops a runaway match just the same, and nothing is paid while the timer does not fire.
Elsewhere (other threads pruning: the timer counts their CPU too; SIGVTALRM handled by someone else; no
setitimer) every search gets what is left of the timeout, counted in the thread's own CPU seconds
between searches (within one search, `regex` counts the process's: `Guard.scan` runs the scans again
holding the GIL when that alone ran the time out)."""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager

NO_LIMIT_S = 1e6  # a timeout of this many CPU seconds (11 days) or more is none

_armed = False  # a timer of ours is running: its signal means the rule ran out of time
_pruning = 0  # threads inside `pruning()`
_pruning_lock = threading.Lock()


@contextmanager
def pruning():
    """Around a document's pruning: while other threads prune too, the main thread does not use the timer."""
    global _pruning
    with _pruning_lock:
        _pruning += 1
    try:
        yield
    finally:
        with _pruning_lock:
            _pruning -= 1


def _on_timer(signum, frame) -> None:
    if _armed:  # a signal that arrives after the scans ended is ignored
        raise TimeoutError("regex timed out")


def _timer_usable() -> bool:
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    if _pruning > 1:  # the timer would count the CPU time of the other threads pruning too
        return False
    handler = signal.getsignal(signal.SIGVTALRM)
    if handler is _on_timer:
        return True
    if handler is not signal.SIG_DFL:
        return False  # the process uses the signal for something else
    signal.signal(signal.SIGVTALRM, _on_timer)
    return True


class Guard:
    """`with Guard(timeout) as guard:` around a rule's scans; each search passes `timeout=guard.left()`
    (None while the timer guards them). A TimeoutError leaves the block when the time is up."""

    def __init__(self, timeout: float | None) -> None:
        # None, inf or a timeout past NO_LIMIT_S: no timeout (setitimer and regex's timeout= overflow on those,
        # and regex then timed out at once)
        self.timeout = None if timeout is None or not timeout < NO_LIMIT_S else timeout
        self.timed = False
        self.deadline = float("inf")

    def __enter__(self) -> Guard:
        global _armed
        if self.timeout is None:
            return self
        if not _armed and self.timeout > 0 and _timer_usable():
            _armed = self.timed = True
            try:
                signal.setitimer(signal.ITIMER_VIRTUAL, self.timeout)
            except (OverflowError, ValueError, OSError):  # a timeout the timer cannot hold
                _armed = self.timed = False
        if not self.timed:
            self.deadline = time.thread_time() + self.timeout
        return self

    def __exit__(self, *exc) -> None:
        global _armed
        if self.timed:
            _armed = False
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)

    def scan(self, run):
        """`run(concurrent)` (a rule's scans, each with `timeout=self.left(), concurrent=concurrent`) under this
        guard. `regex` counts the whole process's CPU from a search's start, so while the GIL is released
        (concurrent) other threads' work counts too: a TimeoutError raised while this thread still has time
        left came from them, and the scans run again holding the GIL (no other Python thread runs then, so
        only threads outside Python still count). Only the thread's own CPU time running out is a timeout."""
        try:
            return run(True)
        except TimeoutError:
            if self.timed or time.thread_time() >= self.deadline:
                raise
        return run(False)  # once: holding the GIL, a TimeoutError is this thread's own

    def left(self) -> float | None:
        """The timeout for the next search: None under the timer, else the CPU seconds left
        (TimeoutError when none are)."""
        return None if self.timed or self.timeout is None else time_left(self.deadline)


def time_left(deadline: float) -> float:
    """The CPU seconds left before `deadline` (a time.thread_time(): this thread's, not the other
    threads'); TimeoutError when none are."""
    left = deadline - time.thread_time()
    if left <= 0:
        raise TimeoutError("regex timed out")
    return left
