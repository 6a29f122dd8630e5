"""`python benchmarks/loop_cpu_serve.py serve ...` = `python -m catp serve ...` (catp from the current folder), with
the CPU time (time.thread_time) of every event-loop callback recorded, and for each of over 3 ms the coroutine
chain where it stopped; written as JSON to $LOOPCPU_OUT at exit (benchmarks/gateway_loop_cpu.py runs it). CPU time, not wall time, so that other
processes taking the cores (a loaded machine) do not count: only what the loop itself spends."""
import asyncio.events, atexit, json, os, runpy, sys, time

stats = []
_orig = asyncio.events.Handle._run


slow = []


def _where(task):
    try:
        coro = task.get_coro()
    except Exception:
        return repr(task)[:80]
    names = []
    while coro is not None and len(names) < 60:
        code = getattr(coro, "cr_code", None) or getattr(coro, "ag_code", None) or getattr(coro, "gi_code", None)
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None) or getattr(coro, "gi_frame", None)
        if code is None:
            names.append(type(coro).__name__)
            break
        names.append(f"{code.co_name}:{frame.f_lineno if frame else '-'}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None) or getattr(coro, "gi_yieldfrom", None)
    return " > ".join(names)


def _run(self):
    t = time.thread_time()
    try:
        return _orig(self)
    finally:
        d = time.thread_time() - t
        stats.append(d)
        if d > 0.003:
            cb = self._callback
            owner = getattr(cb, "__self__", None)
            slow.append((round(1000 * d, 1), _where(owner) if isinstance(owner, asyncio.Task) else repr(cb)[:120]))




gc_pauses = {0: [], 1: [], 2: []}
_gc_start = [0.0]


def _gc(phase, info):
    if phase == "start":
        _gc_start[0] = time.thread_time()
    else:
        gc_pauses[info["generation"]].append(time.thread_time() - _gc_start[0])


def report():
    s = sorted(stats)
    json.dump({"callbacks": len(s), "loop_cpu_s": round(sum(s), 3), "max_ms": round(1000 * s[-1], 2) if s else 0,
               "over_ms": {k: sum(x > k / 1000 for x in s) for k in (1, 2, 5, 10, 20, 50)},
               "top10_ms": [round(1000 * x, 1) for x in s[-10:]], "slow": slow,
               "gc": {g: [len(v), round(1000 * max(v or [0]), 1), round(1000 * sum(v), 1)] for g, v in gc_pauses.items()}}, open(os.environ["LOOPCPU_OUT"], "w"))


if __name__ == "__main__":  # not in the spawned pruning workers
    asyncio.events.Handle._run = _run
    import gc
    gc.callbacks.append(_gc)
    atexit.register(report)
    sys.path.insert(0, os.getcwd())  # the tree under test, not the editable install
    sys.argv = ["catp"] + sys.argv[1:]
    runpy.run_module("catp", run_name="__main__", alter_sys=True)
