"""Pruning speed and memory, rules-only path (default lexical scorer), as ratios measured in one run.

    python benchmarks/bench_prune.py                 # everything (speed of cuad and zh alone: 3.5 minutes at load 1)
    python benchmarks/bench_prune.py --quick         # no 1M-token documents, fewer repeats
    python benchmarks/bench_prune.py --json out.json

What it measures (figures and commands are recorded in docs/benchmarks.md, "## Pruning speed"):

- speed: for each document, the median time of one pass of the text through the fast tokenizer
  (`tokenizers`, Qwen BPE: `Tokenizer.encode`) and the median time of `Pruner.prune(text, ratio=1/6)`
  with a warmed, reused Pruner and its per-document analysis cache emptied before every run. The
  tokenizer's BPE word cache is emptied before every timed run of either (see clear_word_cache;
  `--warm-tokenizer-cache` keeps it, as rounds 1-9 did). Both CPU
  time (process_time: what the code costs; the figure to trust on a loaded machine) and wall time.
  target: prune(128K) <= 3 x tokenizer pass.
- linearity: prune(1M tokens) / prune(128K tokens), target <= 9: `--repeat-1m` rounds (default 3), each a
  128K prune then a 1M prune, and the least CPU time of each size. Alternating the sizes lets a change of
  load hit both alike; one run of a size swings by 10-15 % on a shared machine, more than the margin.
- memory: peak RSS (VmHWM; ru_maxrss off Linux) of a fresh process that loads a Pruner, reads one
  document from a file and prunes it; target <= 400 MB at 128K tokens.
- import: `python -X importtime -c "import catp"` (catp's cumulative import time), target <= 0.3 s, and
  whether torch / transformers are loaded after a rules-only prune (they must not be).
- reuse: in a fresh process, Pruner construction, then three different documents in a row: the first
  pays lazy loading (rules, tokenizer, taggers), the later ones do not.

Documents are built in memory from shared/evals-data (see benchmarks/corpora.py); nothing is written into
the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import corpora  # noqa: E402

K = 1024
SIZES = {"32K": 32 * K, "128K": 128 * K, "1M": 1024 * K}
TARGETS = {"prune_over_tokenizer": 3.0, "linearity": 9.0, "rss_mb": 400.0, "import_s": 0.3}


def fresh(pruner) -> None:
    """Forget analysed documents so that every timed run does the whole work."""
    pruner.clear_cache()


def clear_word_cache(tokenizer) -> None:
    """Empty the BPE word cache of a `tokenizers.Tokenizer`. It keeps the first 10,000 distinct words it
    meets and never evicts, so a text timed again finds its own words cached while a longer text is mostly
    encoded cold; a document in service is met once. (tokenizers >= 0.20; a no-op before.)"""
    clear = getattr(tokenizer.model, "_clear_cache", None)
    if clear is not None:
        clear()


def timed(fn, repeat: int, warmup: int = 1, setup=None) -> dict:
    """Median CPU and wall time of `fn` over `repeat` runs; `setup` runs untimed before each run."""
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    return alternated([fn], repeat, setup)[0]


def summary(cpu: list[float], wall: list[float]) -> dict:
    return {"cpu": statistics.median(cpu), "wall": statistics.median(wall), "cpu_min": min(cpu),
            "wall_min": min(wall), "n": len(cpu)}


def alternated(fns: list, rounds: int, setup=None) -> list[dict]:
    """`rounds` rounds of every function in turn (`setup` untimed before each run): one summary per function."""
    cpu: list[list[float]] = [[] for _ in fns]
    wall: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            if setup:
                setup()
            c, w = time.process_time(), time.perf_counter()
            fn()
            cpu[i].append(time.process_time() - c)
            wall[i].append(time.perf_counter() - w)
    return [summary(c, w) for c, w in zip(cpu, wall)]


def bench_speed(cases: list[tuple[str, str]], repeat: int, log, warm_cache: bool = False,
                repeat_1m: int = 3, scorer: str = "lexical") -> list[dict]:
    from catp.pipeline import Pruner
    from catp.tokens import load_token_counter

    tok = load_token_counter()._tok
    pruners: dict[str, Pruner] = {}
    rows = []
    for kind, size in cases:
        text = corpora.build(kind, SIZES[size])
        domain = corpora.DOMAIN[kind]
        if domain not in pruners:
            pruners[domain] = Pruner(domain=domain, scorer=scorer)
            pruners[domain].prune(corpora.build("cuad", 4 * K), ratio="1/6")  # load rules, taggers
            pruners[domain].prune(corpora.build("zh", 4 * K), ratio="1/6")
        pruner = pruners[domain]
        reps = repeat_1m if size == "1M" else repeat
        encode = timed(lambda: tok.encode(text, add_special_tokens=False), reps,
                       setup=None if warm_cache else lambda: clear_word_cache(tok))

        def run(doc=text):
            fresh(pruner)
            return pruner.prune(doc, ratio="1/6")

        clear = None if warm_cache else lambda: clear_word_cache(pruner.tokens._tok)
        paired = None
        if size == "1M":  # alternated with the 128K text, for the linearity check
            small = corpora.build(kind, SIZES["128K"])
            paired, prune = alternated([lambda: run(small), run], reps, setup=clear)
        else:
            prune = timed(run, reps, setup=clear)
        result = run() if size != "1M" else None
        n_tokens = result.stats.input_tokens if result else len(tok.encode(text, add_special_tokens=False).ids)
        row = {"kind": kind, "size": size, "tokens": n_tokens, "chars": len(text), "tokenizer": encode,
               "prune": prune, "ratio_cpu": prune["cpu"] / encode["cpu"], "ratio_wall": prune["wall"] / encode["wall"]}
        if paired:
            row["prune_128k_alternated"] = paired
        rows.append(row)
        log(f"  {kind:14s} {size:>5s} {n_tokens:>9,} tok  tokenizer {encode['cpu']:.3f}s cpu  "
            f"prune {prune['cpu']:.3f}s cpu (least {prune['cpu_min']:.3f}s of {prune['n']}) / {prune['wall']:.3f}s wall"
            f"  = {row['ratio_cpu']:.2f}x (cpu)"
            + (f"; alternated 128K least {paired['cpu_min']:.3f}s" if paired else ""))
    return rows


_CHILD_RSS = """
import json, resource, sys, time
sys.path.insert(0, {root!r})


def peak_mb():
    # VmHWM: this process's own high-water mark. ru_maxrss is not used on Linux because it keeps the
    # high-water mark of the process before exec (here: the benchmark that started this one).
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


from catp.pipeline import Pruner
text = open({path!r}, encoding="utf-8").read()
pruner = Pruner(domain={domain!r})
pruner.prune(text[:2000], ratio="1/2")
base = peak_mb()
result = pruner.prune(text, ratio="1/6")
peak = peak_mb()
print(json.dumps({{"base_mb": base, "peak_mb": peak, "tokens": result.stats.input_tokens,
                  "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules}}))
"""


def _run_child(template: str, payload: str, suffix: str, kind: str) -> dict:
    """Run `template` in a fresh interpreter with `payload` in a temp file; its last stdout line is JSON."""
    with tempfile.NamedTemporaryFile("w", suffix=suffix, encoding="utf-8", delete=False) as fh:
        fh.write(payload)
    try:
        code = template.format(root=str(ROOT), path=fh.name, domain=corpora.DOMAIN[kind])
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        os.unlink(fh.name)


def bench_memory(cases: list[tuple[str, str]], log) -> list[dict]:
    rows = []
    for kind, size in cases:
        text = corpora.build(kind, SIZES[size])
        data = _run_child(_CHILD_RSS, text, ".txt", kind)
        data.update(kind=kind, size=size, text_mb=len(text.encode()) / 2**20)
        rows.append(data)
        log(f"  {kind:14s} {size:>5s} peak RSS {data['peak_mb']:.0f} MB (after loading: {data['base_mb']:.0f} MB; "
            f"text {data['text_mb']:.1f} MB); torch loaded: {data['torch']}, transformers: {data['transformers']}")
    return rows


def _importtime(module: str) -> float:
    """catp's cumulative import time (s) from python -X importtime, in a fresh process."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                         text=True, cwd=str(ROOT), check=True)
    for line in out.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1e6
    raise RuntimeError(f"no importtime line for {module}")


def bench_import(repeat: int, log) -> dict:
    out = {}
    for module in ("catp", "catp.pipeline", "catp.cli"):
        times = [_importtime(module) for _ in range(repeat)]
        out[module] = {"median_s": statistics.median(times), "min_s": min(times)}
        log(f"  import {module:14s} {out[module]['median_s']:.3f}s (median of {repeat}, -X importtime)")
    code = ("import sys; import catp; from catp.pipeline import Pruner; "
            "Pruner(domain='legal').prune('The Licensee shall pay $5,000 on March 5, 2024. ' * 50, ratio='1/4'); "
            "print(sorted(m for m in ('torch', 'transformers', 'spacy', 'jieba') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), check=True)
    out["heavy_modules_after_en_prune"] = json.loads(loaded.stdout.strip().replace("'", '"'))
    log(f"  modules loaded after a rules-only en prune: {out['heavy_modules_after_en_prune']}")
    return out


_CHILD_REUSE = """
import json, sys, time
sys.path.insert(0, {root!r})
docs = json.load(open({path!r}, encoding="utf-8"))
t = time.perf_counter()
from catp.pipeline import Pruner
pruner = Pruner(domain={domain!r})
out = {{"construct_s": time.perf_counter() - t, "docs_s": []}}
for text in docs:
    t = time.perf_counter()
    pruner.prune(text, ratio="1/6")
    out["docs_s"].append(time.perf_counter() - t)
print(json.dumps(out))
"""


def bench_reuse(log) -> list[dict]:
    rows = []
    for kind in ("cuad", "zh"):
        pool = corpora._texts(kind)
        docs = [corpora.fit(pool[i::3], 32 * K) for i in range(3)]  # three different 32K documents
        data = _run_child(_CHILD_REUSE, json.dumps(docs), ".json", kind)
        data["kind"] = kind
        rows.append(data)
        log(f"  {kind:5s} Pruner() {data['construct_s']:.2f}s; 32K docs: "
            + ", ".join(f"{t:.2f}s" for t in data["docs_s"]) + " (first pays lazy loading)")
    return rows


def verdicts(speed: list[dict], memory: list[dict], imports: dict) -> list[tuple[str, str, bool]]:
    out = []
    by = {(r["kind"], r["size"]): r for r in speed}
    for kind in ("cuad", "zh"):
        r = by.get((kind, "128K"))
        if r:
            out.append((f"{kind} 128K prune / tokenizer pass (cpu)", f"{r['ratio_cpu']:.2f} (<= 3)",
                        r["ratio_cpu"] <= TARGETS["prune_over_tokenizer"]))
        big = by.get((kind, "1M"))
        if big and "prune_128k_alternated" in big:
            lin = big["prune"]["cpu_min"] / big["prune_128k_alternated"]["cpu_min"]
            out.append((f"{kind} prune(1M) / prune(128K) (least cpu)", f"{lin:.2f} (<= 9)",
                        lin <= TARGETS["linearity"]))
    for m in memory:
        if m["size"] == "128K":
            out.append((f"{m['kind']} 128K peak RSS", f"{m['peak_mb']:.0f} MB (<= 400)", m["peak_mb"] <= TARGETS["rss_mb"]))
    if imports:
        t = imports["catp"]["median_s"]
        out.append(("import catp", f"{t:.3f}s (<= 0.3)", t <= TARGETS["import_s"]))
        heavy = [m for m in imports["heavy_modules_after_en_prune"] if m in ("torch", "transformers")]
        out.append(("torch/transformers not loaded (rules-only)", ", ".join(heavy) or "none loaded", not heavy))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="no 1M-token documents, fewer repeats")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per document (median; default 5, quick 3)")
    ap.add_argument("--repeat-1m", type=int, default=3, help="rounds of 128K then 1M prunes for the linearity check (default 3)")
    ap.add_argument("--only", default="speed,memory,import,reuse", help="comma list of sections")
    ap.add_argument("--kinds", default=None, help="comma list of document kinds for the speed section")
    ap.add_argument("--json", help="write all figures here")
    ap.add_argument("--warm-tokenizer-cache", action="store_true",
                    help="keep the tokenizer's word cache between timed runs (rounds 1-9 measured so)")
    ap.add_argument("--scorer", default="lexical", help="the speed section's scorer: lexical or keep (the keep-model)")
    args = ap.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 5)
    sections = set(args.only.split(","))
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    log = console.print
    meta = {"python": platform.python_version(), "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(),
            "argv": sys.argv, "time": time.strftime("%Y-%m-%d %H:%M:%S")}
    log(f"[bold]catp pruning benchmark[/] python {meta['python']}, {meta['cpus']} cpus, "
        f"load average {meta['loadavg_start'][0]:.1f}")
    kinds = args.kinds.split(",") if args.kinds else ["cuad", "zh", *corpora.SYNTHETIC]
    cases = []
    for kind in kinds:
        sizes = ["32K", "128K"] + ([] if args.quick else ["1M"]) if kind in corpora.SETS else ["128K"]
        cases.extend((kind, s) for s in sizes)
    results: dict = {"meta": meta}
    if "speed" in sections:
        log("[bold]speed[/] (median; CPU time is the figure to trust on a loaded machine)")
        results["speed"] = bench_speed(cases, repeat, log, warm_cache=args.warm_tokenizer_cache,
                                       repeat_1m=args.repeat_1m, scorer=args.scorer)
        results["scorer"] = args.scorer
        results["tokenizer_word_cache"] = "warm" if args.warm_tokenizer_cache else "emptied before each timed run"
    if "memory" in sections:
        log("[bold]memory[/] (fresh process each)")
        results["memory"] = bench_memory([(k, "128K") for k in ("cuad", "zh")]
                                         + ([] if args.quick else [("cuad", "1M")]), log)
    if "import" in sections:
        log("[bold]import[/]")
        results["import"] = bench_import(5 if not args.quick else 3, log)
    if "reuse" in sections:
        log("[bold]reuse[/] (fresh process each)")
        results["reuse"] = bench_reuse(log)
    meta["loadavg_end"] = os.getloadavg()
    table = Table(title="targets")
    for col in ("check", "figure", "met"):
        table.add_column(col)
    checks = verdicts(results.get("speed", []), results.get("memory", []), results.get("import", {}))
    for name, figure, ok in checks:
        table.add_row(name, figure, "[green]yes[/]" if ok else "[red]NO[/]")
    results["targets"] = [{"check": n, "figure": f, "met": ok} for n, f, ok in checks]
    console.print(table)
    log(f"load average at the end: {meta['loadavg_end'][0]:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
