"""Throughput of the LM scorer on the real Qwen1.5-0.5B shape (random weights).

Qwen1.5-0.5B's config.json: hidden 1024, 24 layers, 16 heads (16 KV heads),
intermediate 2816, vocab 151936, tied embeddings, rope_theta 1e6,
max_position_embeddings 32768. Real weights cannot be fetched here, so the
weights are random; speed does not depend on their values. Input token ids are
random too (never zeros). It times `LMScorer.token_nll`, the code path that
`score()` uses, end to end (planning, batching, transfer of the results).

CPU (here):   python benchmarks/bench_scorer.py --device cpu --tokens 2048 --variants 2048:0
H200 (lent):  python3 benchmarks/bench_scorer.py --device cuda --tokens 131072
Figures and commands: docs/benchmarks.md, section "LM scorer".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QWEN15_05B = dict(
    vocab_size=151936, hidden_size=1024, intermediate_size=2816, num_hidden_layers=24,
    num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=32768,
    rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu",
    use_sliding_window=False,
)


def build_model(device, dtype, layers: int | None = None):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = dict(QWEN15_05B)
    if layers:
        cfg["num_hidden_layers"] = layers
    config = Qwen2Config(**cfg)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(dtype)
    # widen the logit spread (std 0.02 init gives near-uniform predictions) so that
    # the correctness check below can tell one token from another
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(4.0)
    return model.eval()


def params(model) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def flops_floor(n_params: int, tokens: int, rate: float) -> float:
    return 2 * n_params * tokens / rate


def naive_nll(model, ids, window: int, overlap: int):
    """The plain transformers loop: full float32 logits, log_softmax, one window at a time."""
    import torch

    from catp.scoring._logprobs import plan_windows

    out = {}
    n = len(ids)
    ids_t = torch.as_tensor(ids, device=next(model.parameters()).device)
    for w in plan_windows(n, [(1, n)], window, overlap):
        with torch.inference_mode():
            logits = model(ids_t[None, w.start:w.end], use_cache=False).logits[0].float()
            lp = torch.log_softmax(logits, -1)
            pos = torch.arange(w.score_from, w.end, device=ids_t.device)
            vals = -lp[pos - w.start - 1, ids_t[pos]]
        out.update(zip(pos.tolist(), vals.tolist()))
    return out


def profile(scorer, ids, repeat: int = 3) -> dict:
    """Split one pass into the decoder stack and the output layer (each timed alone)."""
    import torch

    def timed(fn):
        fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)

    dev = scorer.device
    n = len(ids)
    windows = scorer.plan(n, [(1, n)])
    length = windows[0].end - windows[0].start
    per = max(1, scorer.batch_tokens // length)
    ids_dev = torch.as_tensor(ids, device=dev)
    ar = torch.arange(length, device=dev)
    batches = [ids_dev[torch.as_tensor([w.start for w in windows[i:i + per]], device=dev)[:, None] + ar]
               for i in range(0, len(windows), per)]

    def body():
        with torch.inference_mode():
            for rows in batches:
                scorer._base(input_ids=rows, use_cache=False)

    hid = torch.randn(n, scorer._head.weight.shape[1], device=dev, dtype=scorer.dtype)

    def head():
        with torch.inference_mode():
            scorer._head_nll(hid, ids_dev)

    def head_matmul_only():
        with torch.inference_mode():
            w = scorer._head.weight
            for s in range(0, n, scorer._chunk_rows):
                torch.nn.functional.linear(hid[s:s + scorer._chunk_rows], w)

    return {"body_s": timed(body), "head_s": timed(head), "head_matmul_s": timed(head_matmul_only),
            "chunk_rows": scorer._chunk_rows, "windows": len(windows), "batches": len(batches)}


def check(scorer, model, ids, window: int) -> dict:
    """Fast path vs. a float32 reference on the first window (same context for both)."""
    import copy

    import torch

    n = min(window, len(ids))
    fast = scorer.token_nll(ids[:n])[1:]
    ref_model = copy.deepcopy(model).float()
    with torch.inference_mode():
        lp = torch.log_softmax(ref_model(torch.as_tensor([ids[:n]], device=scorer.device)).logits[0].float(), -1)
        ref = (-lp[torch.arange(n - 1), torch.as_tensor(ids[1:n], device=scorer.device)]).tolist()
    del ref_model, lp
    diff = [abs(a - b) for a, b in zip(fast, ref)]
    rel = math.sqrt(sum(d * d for d in diff) / sum(r * r for r in ref))
    spread = statistics.pstdev(ref)
    return {"max_abs": max(diff), "rel_l2": rel, "ref_std": spread, "nan": any(math.isnan(x) for x in fast)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--tokens", type=int, default=131072)
    ap.add_argument("--variants", default="4096:1024,2048:1024,3072:1024,8192:1024,4096:0",
                    help="window:overlap pairs, comma separated")
    ap.add_argument("--compile", default="auto", help="comma separated: false, auto (logsumexp), true (layers too)")
    ap.add_argument("--batch-tokens", default="65536", help="comma separated")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--naive", action="store_true", help="also time the plain float32-logits loop")
    ap.add_argument("--layers", type=int, default=None, help="fewer layers (smoke runs only)")
    ap.add_argument("--rate", type=float, default=790e12, help="bf16 matrix FLOP/s for the floor")
    ap.add_argument("--profile", action="store_true", help="time decoder stack and output layer apart")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch

    from catp.scoring.lm import LMScorer, pick_device
    from catp.scoring.model_source import load_tokenizer

    tiny_tok = Path(__file__).resolve().parents[1] / "tests"
    sys.path.insert(0, str(tiny_tok))
    from tiny_qwen import build_tokenizer  # the token ids below are random; a tokenizer object is required

    tok_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "catp-bench-tok"
    if not (tok_dir / "tokenizer.json").exists():
        build_tokenizer().save_pretrained(tok_dir)
    tokenizer = load_tokenizer(tok_dir)

    device = pick_device(args.device)
    on_gpu = device.type == "cuda"
    dtype = torch.bfloat16 if on_gpu else torch.float32
    t0 = time.perf_counter()
    model = build_model(device, dtype, args.layers)
    n_params = params(model)
    print(f"model: Qwen1.5-0.5B shape, {n_params / 1e6:.1f}M params, {dtype}, {device}, "
          f"built in {time.perf_counter() - t0:.1f}s", flush=True)
    if on_gpu:
        print(f"gpu: {torch.cuda.get_device_name(device)}, torch {torch.__version__}", flush=True)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, QWEN15_05B["vocab_size"], (args.tokens,), generator=gen).tolist()
    floor = flops_floor(n_params, args.tokens, args.rate)
    print(f"FLOP floor for {args.tokens} tokens at {args.rate / 1e12:.0f} TFLOP/s: {floor:.3f}s", flush=True)

    scorer = LMScorer(model, tokenizer=tokenizer, device=str(device), dtype=str(dtype).split(".")[-1],
                      compile="auto" if on_gpu else False, window=4096, overlap=1024, max_tokens=10**9)
    checks = check(scorer, model, ids, min(4096, args.tokens))
    print("check vs float32 reference (first window):", json.dumps(checks), flush=True)

    rows = []
    for comp in args.compile.split(","):
        comp_v = {"false": False, "auto": "auto", "true": True}[comp.strip().lower()]
        for bt in [int(b) for b in args.batch_tokens.split(",")]:
            for var in args.variants.split(","):
                window, overlap = (int(x) for x in var.split(":"))
                scorer = LMScorer(model, tokenizer=tokenizer, device=str(device), dtype=str(dtype).split(".")[-1],
                                  compile=comp_v, window=window, overlap=overlap, max_tokens=10**9,
                                  batch_tokens=bt)
                fed = sum(w.end - w.start for w in scorer.plan(len(ids), [(1, len(ids))]))
                t_w = time.perf_counter()
                scorer.token_nll(ids)  # warm-up (compiles, if asked)
                warm = time.perf_counter() - t_w
                times = []
                if on_gpu:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats(device)
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    nll = scorer.token_nll(ids)
                    if on_gpu:
                        torch.cuda.synchronize()
                    times.append(time.perf_counter() - t)
                peak = torch.cuda.max_memory_allocated(device) / 2**30 if on_gpu else float("nan")
                med = statistics.median(times)
                row = dict(compile=comp, batch_tokens=bt, window=window, overlap=overlap, tokens=len(ids),
                           fed=fed, fed_ratio=fed / len(ids), median_s=med, min_s=min(times),
                           spread_s=max(times) - min(times), tok_per_s=len(ids) / med, peak_gib=peak,
                           warmup_s=warm, nan=sum(math.isnan(x) for x in nll[1:]))
                if args.profile and on_gpu and (window, overlap) == (4096, 1024):
                    row["profile"] = profile(scorer, ids)
                rows.append(row)
                print(json.dumps(row), flush=True)

    if args.naive:
        for var in args.variants.split(",")[:1] + ["4096:0"]:
            window, overlap = (int(x) for x in var.split(":"))
            naive_nll(model, ids[:8192], window, overlap)
            if on_gpu:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats(device)
            t = time.perf_counter()
            naive_nll(model, ids, window, overlap)
            if on_gpu:
                torch.cuda.synchronize()
            dt = time.perf_counter() - t
            peak = torch.cuda.max_memory_allocated(device) / 2**30 if on_gpu else float("nan")
            row = dict(compile="naive", window=window, overlap=overlap, tokens=len(ids), median_s=dt,
                       tok_per_s=len(ids) / dt, peak_gib=peak)
            rows.append(row)
            print(json.dumps(row), flush=True)


    print(f"\n{'compile':8} {'batch':>6} {'win:ovl':>10} {'fed':>5} {'median s':>9} {'tok/s':>10} "
          f"{'peak GiB':>8} {'128K est s':>10}")
    for r in rows:
        est = 131072 / r["tok_per_s"]
        print(f"{r['compile']:8} {r.get('batch_tokens', '-'):>6} {str(r['window']) + ':' + str(r['overlap']):>10} "
              f"{r.get('fed_ratio', float('nan')):5.2f} {r['median_s']:9.3f} {r['tok_per_s']:10.0f} "
              f"{r['peak_gib']:8.2f} {est:10.2f}")
    out = args.json or (os.path.join(os.environ["OUT"], "bench_scorer.json") if os.environ.get("OUT") else None)
    if out:
        Path(out).write_text(json.dumps({"rows": rows, "check": checks, "floor_s": floor, "params": n_params}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
