"""The gateway's event-loop CPU per callback, under a load of long documents, for one or more source trees.

    python benchmarks/gateway_loop_cpu.py 6 /path/to/tree-before /path/to/tree-after

N documents of 30K-128K Qwen tokens (benchmarks/bench_gateway.py's), the fast stand-in upstream, sent at once to
the gateway of each tree in turn (`--workers 2`), run under benchmarks/loop_cpu_serve.py; /health polled as
bench_gateway.py does. Prints one JSON line per tree. CPU time, so the machine's other load does not count."""
import asyncio, json, os, signal, subprocess, sys, tempfile, time
from pathlib import Path
def main():
    trees = sys.argv[2:]
    n = int(sys.argv[1])
    sys.path.insert(0, trees[0])
    from benchmarks.bench_gateway import documents, fire, free_port, messages, pct, start_upstream, wait_http
    docs = documents(n, 30000, 128000)
    tmp = Path(tempfile.mkdtemp(prefix="loopcpu-"))
    upstream, model, stop = start_upstream("standin", tmp)
    try:
        for tree in trees:
            port = free_port()
            out = tmp / (Path(tree).name + ".json")
            proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve().parent / "loop_cpu_serve.py"), "serve", "--upstream", upstream, "--port", str(port),
                                     "--workers", "2", "--queue", "1000", "--domain", "legal"], cwd=tree,
                                    env={**os.environ, "LOOPCPU_OUT": str(out)}, stdout=open(tmp / "gw.log", "ab"), stderr=subprocess.STDOUT)
            root = f"http://127.0.0.1:{port}"
            wait_http(root + "/health", proc)
            load0 = os.getloadavg()
            res = asyncio.run(fire(root + "/v1", model, [messages(d, q) for d, q in docs], root + "/health"))
            load1 = os.getloadavg()
            proc.send_signal(signal.SIGTERM); proc.wait(timeout=120)
            h = sorted(res["health"])
            print(json.dumps({"tree": tree, "errors": len(res["errors"]), "wall_s": round(res["wall_s"], 1),
                              "health_polls": len(h), "health_p50_ms": round(1000 * pct(h, 50), 1),
                              "health_p99_ms": round(1000 * pct(h, 99), 1),
                              "load": [round(load0[0], 1), round(load1[0], 1)], "loop": json.loads(out.read_text()), "catp": subprocess.run([sys.executable, "-c", "import sys, os; sys.path.insert(0, os.getcwd()); import catp; print(catp.__file__)"], cwd=tree, capture_output=True, text=True).stdout.strip()}), flush=True)
    finally:
        stop()


if __name__ == "__main__":
    main()
