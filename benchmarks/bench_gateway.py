"""Load benchmark of `catp serve`: many concurrent openai-SDK clients, each sending a long document with a
question, against the gateway and against the upstream called directly with the already-pruned prompt.

    python benchmarks/bench_gateway.py --upstream standin      # the gateway's own overhead
    python benchmarks/bench_gateway.py --upstream vllm         # the real vLLM CPU server (tiny model)
    python benchmarks/bench_gateway.py --upstream standin --clients 20 --min-tokens 30000 --max-tokens 40000

Documents: cuad dev contracts (../shared/evals-data) joined from a different starting contract per client and
cut to a target spread evenly over [--min-tokens, --max-tokens] Qwen tokens; the question is that first
contract's first question. Upstreams, started here on 127.0.0.1:
- `standin`: benchmarks/standin_upstream.py, a fast stand-in that answers at once (NOT a model), with
  max_model_len 32768 counted in Qwen's BPE: the figures are the gateway's own cost.
- `vllm`: the real vLLM CPU server serving tests/tiny_qwen.py's random-weight model (max_model_len 2048,
  its own small BPE), started as tests/conftest.py does (needs /opt/catp-vllm).
Phases, one after the other: (1) the prompts are pruned here, in this process, exactly as a gateway worker
prunes them (catp.serve.plan); (2) every client at once calls the upstream directly with its pruned prompt;
(3) every client at once calls the gateway with the whole document, while /health is polled every 50 ms
(from a process of its own).
Added latency = gateway latency - direct latency, per document. Pruning throughput per worker = the
gateway's prompt tokens before pruning / its summed prune seconds (catp_serve_* metrics).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from benchmarks import corpora  # noqa: E402

MAX_TOKENS = 16


def documents(n: int, lo: int, hi: int, long: int | None = None, short: int = 2000) -> list[tuple[str, str]]:
    """n documents; the first `long` (default: all) of lo..hi tokens, the others of `short` tokens."""
    with open(corpora.EVALS_DATA / "cuad.dev.jsonl", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    long = n if long is None else long
    out = []
    for i in range(n):
        target = lo + (hi - lo) * i // max(1, long - 1) if i < long else short
        start = (i * 7) % len(rows)
        parts = [r["text"] for r in rows[start:] + rows[:start]]
        questions = rows[start].get("questions") or []
        question = questions[0]["question"] if questions else "What is the governing law?"
        out.append((corpora.fit(parts, target), question))
    return out


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(p / 100 * len(values)) - 1))]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:4]} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} not ready after {timeout}s")


def start_upstream(kind: str, tmp: Path):
    """(root URL, model name, stop())."""
    if kind == "standin":
        port = free_port()
        proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "standin_upstream.py"), "--port",
                                 str(port), "--max-model-len", "32768"], cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))})
        root = f"http://127.0.0.1:{port}"
        wait_http(root + "/v1/models", proc)

        def stop():
            proc.terminate()
            proc.wait(timeout=30)

        return root, "standin", stop
    from conftest import build_tiny_model, start_vllm_server, stop_vllm_server

    model = build_tiny_model(tmp / "model", max_len=2048)
    server = start_vllm_server(model, tmp / "vllm.log")
    return server.root, server.model, lambda: stop_vllm_server(server)


def start_gateway(upstream: str, workers: int, tmp: Path) -> tuple[str, subprocess.Popen]:
    port = free_port()
    log = open(tmp / "gateway.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "catp", "serve", "--upstream", upstream, "--port", str(port),
                             "--workers", str(workers), "--queue", "1000", "--domain", "legal"],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    root = f"http://127.0.0.1:{port}"
    wait_http(root + "/health", proc)
    return root, proc


def prune_here(upstream: str, model: str, docs: list[tuple[str, str]], workers: int) -> list[list[dict]]:
    """Phase 1: the prompts a gateway worker would send (same code, same settings, as many processes)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from catp.serve import plan

    settings = {"upstream": upstream, "domain": "legal", "rules": [], "tokenizer": None, "api_key": None,
                "connect_timeout": 5.0, "read_timeout": 600.0}
    jobs = [{"kind": "chat", "model": model, "control": {"mode": "auto"}, "max_tokens": MAX_TOKENS,
             "concurrency": 1, "messages": messages(doc, question)} for doc, question in docs]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=plan.init_worker, initargs=(settings,)) as pool:
        results = list(pool.map(plan.plan, jobs))
    out = []
    for job, result in zip(jobs, results):
        if "error" in result:
            raise RuntimeError(result["error"])
        out.append(result.get("messages") or job["messages"])
    return out


def messages(doc: str, question: str) -> list[dict]:
    return [{"role": "system", "content": "Answer from the document."}, {"role": "user", "content": doc},
            {"role": "user", "content": question}]


async def fire(base: str, model: str, bodies: list[list[dict]], health_url: str | None = None) -> dict:
    import httpx
    import openai

    client = openai.AsyncOpenAI(base_url=base, api_key="unused", max_retries=0, timeout=1800,
                                http_client=httpx.AsyncClient(limits=httpx.Limits(max_connections=1000),
                                                              timeout=1800))
    latencies: list[float | None] = [None] * len(bodies)
    errors: list[str] = []
    health: list[float] = []
    health_errors = 0

    async def one(i: int) -> None:
        start = time.perf_counter()
        try:
            await client.chat.completions.create(model=model, messages=bodies[i], max_tokens=MAX_TOKENS,
                                                 temperature=0, extra_body={"ignore_eos": True})
            latencies[i] = time.perf_counter() - start
        except Exception as exc:  # counted, with its kind
            errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")

    poller = HealthPoller(health_url) if health_url else None
    wall = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(len(bodies))))
    wall = time.perf_counter() - wall
    if poller:
        health, health_errors = poller.stop()
    return {"latencies": latencies, "errors": errors, "health": health, "health_errors": health_errors,
            "wall_s": wall}


def _poll(url: str, stop, out) -> None:
    import httpx

    times, errors = [], 0
    with httpx.Client(timeout=10) as h:
        while not stop.is_set():
            start = time.perf_counter()
            try:
                ok = h.get(url).status_code == 200
            except httpx.HTTPError:
                ok = False
            times.append(time.perf_counter() - start)
            errors += not ok
            time.sleep(0.05)
    out.put((times, errors))


class HealthPoller:
    """GET /health every 50 ms from a process of its own, so that the clients' event loop (building
    MB-sized JSON bodies) does not delay the measurement."""

    def __init__(self, url: str) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._stop, self._out = ctx.Event(), ctx.Queue()
        self._proc = ctx.Process(target=_poll, args=(url, self._stop, self._out), daemon=True)
        self._proc.start()

    def stop(self) -> tuple[list[float], int]:
        self._stop.set()
        result = self._out.get(timeout=60)
        self._proc.join(timeout=30)
        return result


def metric(text: str, name: str) -> float:
    return sum(float(v) for v in re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)", text, re.M))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", choices=("standin", "vllm"), default="standin")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--min-tokens", type=int, default=30_000)
    ap.add_argument("--max-tokens", type=int, default=128_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--long", type=int, help="only this many clients send a long document; the others a "
                                             "2,000-token one that fits (a mixed load); default: all")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    import httpx

    tmp = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    docs = documents(args.clients, args.min_tokens, args.max_tokens, args.long)
    print(f"{len(docs)} documents ({args.long or args.clients} of {args.min_tokens:,}-{args.max_tokens:,} Qwen tokens) built in "
          f"{time.perf_counter() - t0:.0f}s", flush=True)
    upstream, model, stop_upstream = start_upstream(args.upstream, tmp)
    gateway = proc = None
    try:
        t0 = time.perf_counter()
        pruned = prune_here(upstream, model, docs, args.workers)
        print(f"phase 1: pruned here in {time.perf_counter() - t0:.0f}s", flush=True)
        direct = asyncio.run(fire(upstream + "/v1", model, pruned))
        print(f"phase 2: direct, {len(direct['errors'])} errors, wall {direct['wall_s']:.1f}s", flush=True)
        gateway, proc = start_gateway(upstream, args.workers, tmp)
        load_at = os.getloadavg()
        via = asyncio.run(fire(gateway + "/v1", model, [messages(d, q) for d, q in docs], gateway + "/health"))
        load_after = os.getloadavg()
        metrics = httpx.get(gateway + "/metrics", timeout=10).text
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        stop_upstream()
    added = [g - d for g, d in zip(via["latencies"], direct["latencies"]) if g is not None and d is not None]
    prune_s = metric(metrics, "catp_serve_prune_seconds_sum")
    before = metric(metrics, "catp_serve_prompt_tokens_before_total")
    figures = {
        "upstream": args.upstream, "clients": args.clients, "workers": args.workers,
        "doc_tokens": [args.min_tokens, args.max_tokens], "long_clients": args.long or args.clients,
        "errors_gateway": len(via["errors"]), "errors_direct": len(direct["errors"]),
        "error_kinds": sorted(set(via["errors"]))[:5],
        "direct_p50_s": pct([x for x in direct["latencies"] if x], 50),
        "direct_p99_s": pct([x for x in direct["latencies"] if x], 99),
        "gateway_p50_s": pct([x for x in via["latencies"] if x], 50),
        "gateway_p99_s": pct([x for x in via["latencies"] if x], 99),
        "added_p50_s": pct(added, 50), "added_p99_s": pct(added, 99),
        "gateway_wall_s": via["wall_s"],
        "pruned_requests": metric(metrics, "catp_serve_prune_seconds_count"),
        "prune_tokens_per_s_per_worker": before / prune_s if prune_s else None,
        "mean_prune_s": prune_s / max(1, metric(metrics, "catp_serve_prune_seconds_count")),
        "health_polls": len(via["health"]), "health_errors": via["health_errors"],
        "health_p50_ms": 1000 * pct(via["health"], 50), "health_p99_ms": 1000 * pct(via["health"], 99),
        "health_max_ms": 1000 * max(via["health"] or [float("nan")]),
        "loadavg_before": load_before, "loadavg_at_start": load_at, "loadavg_after": load_after,
        "cpus": os.cpu_count(),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
