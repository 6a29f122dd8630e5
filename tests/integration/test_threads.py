"""One Pruner shared by a thread pool (a web server's workers) gives what it gives sequentially; it pickles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter, so the threads are the first to load the rules, jieba, spaCy and the tokenizer.
RACE = r"""
import json, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from catp import Pruner

docs = [(Path("examples") / n).read_text(encoding="utf-8") for n in
        ("contract_en.txt", "contract_zh.txt", "announcement_zh.txt", "medical_zh.txt", "report_en.txt")]
docs += [d[: len(d) // 3] for d in docs]
jobs = [(d, b, q) for d in docs for b in (40, 400, 3000) for q in (None, "付款 payment date")]

def outcome(pruner, job):
    doc, budget, question = job
    r = pruner.prune(doc, budget=budget, question=question)
    return [r.text, [[k.start, k.end, k.reasons] for k in r.kept], len(r.dropped_protected), r.warnings,
            r.stats.output_tokens]

domain = sys.argv[1] if sys.argv[1] != "-" else None
shared = Pruner(domain=domain)
with ThreadPoolExecutor(8) as pool:
    threaded = list(pool.map(lambda job: outcome(shared, job), jobs * 3))
expected = [outcome(Pruner(domain=domain), job) for job in jobs]  # a fresh Pruner each, one at a time
print(json.dumps([i % len(jobs) for i, got in enumerate(threaded) if got != expected[i % len(jobs)]]))
"""


@pytest.mark.parametrize("domain", ["-", "legal"])
def test_one_pruner_in_many_threads_gives_the_sequential_results(domain):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", RACE, domain], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [], "these jobs differ when run in threads"


def _burn_cpu(seconds: float) -> None:
    import time
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


def test_a_rule_in_a_worker_thread_is_not_charged_for_other_threads_cpu():
    import threading

    from catp.rules.guard import Guard

    ready, burnt, outcome = threading.Event(), threading.Event(), []

    def rule_scan():
        with Guard(0.3) as guard:
            ready.set()
            burnt.wait()  # this thread uses no CPU meanwhile: another thread uses 0.5 s
            try:
                guard.left()
                outcome.append("in time")
            except TimeoutError:
                outcome.append("timed out")

    worker = threading.Thread(target=rule_scan)
    worker.start()
    ready.wait()
    _burn_cpu(0.5)
    burnt.set()
    worker.join()
    assert outcome == ["in time"]


def test_a_scan_timed_out_by_other_threads_cpu_runs_again_holding_the_gil():
    """`regex` counts the process's CPU from a search's start: other threads' work while this one waits (for the
    GIL, say) ran a 2 s timeout out on a 7 ms scan, and a rule was skipped under load (entity.org_en, seen in
    test_one_pruner_in_many_threads_gives_the_sequential_results). Guard.scan runs such a scan again, holding the
    GIL; the thread's own CPU running out is still a timeout."""
    import threading

    import regex

    from catp.rules.guard import Guard

    pattern, text = regex.compile(r"\bA\w+"), "Alpha beta Atlas gamma Aurora " * 20
    waiting, burnt, attempts, outcome = threading.Event(), threading.Event(), [], []

    def run(concurrent: bool) -> list:
        attempts.append(concurrent)
        found = pattern.finditer(text, timeout=guard.left(), concurrent=concurrent)
        first = [next(found)]
        if len(attempts) == 1:  # the first scan stalls while another thread works (0.5 s of CPU)
            waiting.set()
            burnt.wait()
        return first + list(found)

    def worker():
        nonlocal guard
        with Guard(0.3) as guard:
            try:
                outcome.append(len(guard.scan(run)))
            except TimeoutError:
                outcome.append("timed out")

    guard = None
    thread = threading.Thread(target=worker)
    thread.start()
    waiting.wait()
    _burn_cpu(0.5)
    burnt.set()
    thread.join()
    assert attempts == [True, False] and outcome == [60]

    def runaway(concurrent: bool) -> list:  # catastrophic backtracking: this thread's own CPU runs out
        return list(regex.finditer(r"(?:(?:a|aa)+)+c", "a" * 40, timeout=guard.left(), concurrent=concurrent))

    def worker_runaway():
        nonlocal guard
        with Guard(0.2) as guard:
            try:
                guard.scan(runaway)
                outcome.append("finished")
            except TimeoutError:
                outcome.append("timed out")

    thread = threading.Thread(target=worker_runaway)
    thread.start()
    thread.join(timeout=30)
    assert outcome[-1] == "timed out"


def test_the_main_thread_timer_is_not_armed_while_other_threads_prune():
    """ITIMER_VIRTUAL counts the CPU time of every thread of the process; an idle thread (Ray's, a
    server's) does not stop the main thread from using it."""
    import threading

    from catp.rules.guard import Guard, pruning

    def prune_until(event):
        with pruning():
            event.wait()

    for busy, timed in ((True, False), (False, True)):
        stop = threading.Event()
        other = threading.Thread(target=prune_until if busy else stop.wait, args=(stop,) if busy else ())
        other.start()
        try:
            with pruning(), Guard(1.0) as guard:
                assert guard.timed == timed
        finally:
            stop.set()
            other.join()


def test_a_pruner_pickles_without_the_texts_it_analysed():
    import pickle

    from catp import Pruner

    doc = (ROOT / "examples" / "contract_zh.txt").read_text(encoding="utf-8")
    pruner = Pruner(domain="legal")
    before = pruner.prune(doc, ratio="1/6")
    blob = pickle.dumps(pruner)
    assert doc[-300:].encode("utf-8") not in blob  # neither the analysis cache nor the tokenizer's last count
    copy = pickle.loads(blob)
    assert copy.prune(doc, ratio="1/6").text == before.text


def test_a_pruner_with_the_vllm_scorer_pickles(vllm_server):
    import pickle

    from catp import Pruner

    doc = (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")[:6000]
    pruner = Pruner(scorer="vllm", scorer_options={"url": str(vllm_server)})
    copy = pickle.loads(pickle.dumps(pruner))
    assert copy.prune(doc, budget=300).text == pruner.prune(doc, budget=300).text
