"""catp/rules/guard.py: a rule's regex scans stop after their timeout, under the CPU timer (main thread)
or regex's own timeout (elsewhere); the timer never outlives the scans."""

from __future__ import annotations

import signal
import threading

import pytest
import regex

from catp.rules.guard import Guard

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no setitimer on this platform")

RUNAWAY = regex.compile("(a|a)+$")
LINE = "a" * 60 + "b"


def runaway_scan(timeout: float) -> Guard:
    with Guard(timeout) as guard:
        list(RUNAWAY.finditer(LINE, timeout=guard.left(), concurrent=True))
    return guard


def timer_is_free() -> bool:
    """No guard holds the timer: a new one takes it."""
    with Guard(1.0) as guard:
        return guard.timed


def test_the_timer_stops_a_runaway_scan_and_is_disarmed():
    with pytest.raises(TimeoutError):
        runaway_scan(0.05)
    assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0) and timer_is_free()
    with Guard(1.0) as guard:
        assert guard.timed and guard.left() is None
        assert signal.getitimer(signal.ITIMER_VIRTUAL)[0] > 0
    assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)


def test_a_timeout_too_long_for_the_timer_is_no_timeout():
    with Guard(1e12) as guard:  # past NO_LIMIT_S: setitimer and regex's timeout= overflow (issue 25 point 8)
        assert not guard.timed and guard.left() is None
    assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0) and timer_is_free()


def test_a_signal_after_the_scans_is_ignored():
    with Guard(1.0):
        pass
    signal.raise_signal(signal.SIGVTALRM)  # would raise TimeoutError if the handler still acted on it


def test_in_another_thread_regex_timeout_guards_the_scan():
    outcome = []

    def work():
        try:
            runaway_scan(0.05)
            outcome.append("finished")
        except TimeoutError:
            outcome.append("timeout")

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert outcome == ["timeout"]


def test_a_foreign_handler_is_left_alone():
    def theirs(signum, frame):
        pass

    before = signal.signal(signal.SIGVTALRM, theirs)
    try:
        with Guard(1.0) as guard:
            assert not guard.timed and 0 < guard.left() <= 1.0
        with pytest.raises(TimeoutError):
            runaway_scan(0.05)
        assert signal.getsignal(signal.SIGVTALRM) is theirs
    finally:
        signal.signal(signal.SIGVTALRM, before)
