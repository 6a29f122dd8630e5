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
import gc
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

    from catp.scoring.logprobs import plan_windows

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

    if scorer.engine != "hf":
        return profile_engine(scorer, ids, repeat)

    def timed(fn):
        return _timed(fn, repeat)

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


def _timed(fn, repeat: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def profile_engine(scorer, ids, repeat: int = 3) -> dict:
    """Own decoder (fused / lanes): the whole pass with the output layer stubbed out, and the
    output layer alone on random hidden states (matmuls alone, then with the logsumexp)."""
    import torch

    dev = scorer.device
    n = len(ids)
    real = scorer._head_nll
    scorer._head_nll = lambda h, t: torch.zeros(h.shape[0], dtype=torch.float32, device=h.device)
    try:
        body = _timed(lambda: scorer.token_nll(ids), repeat)
    finally:
        scorer._head_nll = real
    hid = torch.randn(n, scorer._head.weight.shape[1], device=dev, dtype=scorer.dtype)
    tg = torch.as_tensor(ids, device=dev)

    def head():
        with torch.inference_mode():
            scorer._head_nll(hid, tg)

    def head_matmul_only():
        with torch.inference_mode():
            for s in range(0, n, scorer._chunk_rows):
                torch.nn.functional.linear(hid[s:s + scorer._chunk_rows], scorer._head.weight)

    return {"body_s": body, "head_s": _timed(head, repeat), "head_matmul_s": _timed(head_matmul_only, repeat),
            "chunk_rows": scorer._chunk_rows, "engine": scorer.engine,
            "lse": getattr(scorer._lse, "__module__", str(scorer._lse))}


def lane_reference(model, ids, pieces, context: int, device) -> list[float]:
    """The same lanes computed by the model's own (transformers) forward in float32: one pass
    per lane with a mask that lets each chunk of new tokens see only its own lane's keys from
    `context` tokens before the chunk on (a one-window lane is a plain causal pass)."""
    import torch

    out = [math.nan] * len(ids)
    for p in pieces:
        s0, e = p[0].start, p[-1].end
        t = e - s0
        lo = torch.zeros(t, dtype=torch.long, device=device)
        for w in p[1:]:
            lo[w.start + context - s0:w.end - s0] = w.start - s0
        q = torch.arange(t, device=device)[:, None]
        k = torch.arange(t, device=device)[None, :]
        allowed = (k <= q) & (k >= lo[:, None])
        mask = torch.zeros(t, t, device=device).masked_fill(~allowed, float("-inf"))[None, None]
        with torch.inference_mode():
            logits = model(torch.as_tensor([ids[s0:e]], device=device), attention_mask=mask).logits[0]
            lp = torch.log_softmax(logits.float(), -1)
            pos = torch.arange(max(p[0].score_from, s0 + 1), e, device=device)
            vals = (-lp[pos - s0 - 1, torch.as_tensor(ids, device=device)[pos]]).tolist()
        for i, v in zip(pos.tolist(), vals):
            out[i] = v
        del logits, lp, mask
    return out


def check_engine(scorer, model, ids) -> dict:
    """The scorer (any engine) against the same windows / lanes run by transformers in float32."""
    import copy

    import torch

    runs = [scorer.token_nll(ids) for _ in range(3)]  # repeated calls must agree exactly
    fast = runs[-1]
    pieces = scorer.lane_pieces(scorer.plan(len(ids), [(1, len(ids))]))
    ref_model = copy.deepcopy(model).float()
    ref = lane_reference(ref_model, ids, pieces, max(scorer.overlap, 1), scorer.device)
    del ref_model
    torch.cuda.empty_cache() if scorer.device.type == "cuda" else None
    diff = [abs(a - b) for a, b in zip(fast[1:], ref[1:])]
    rel = math.sqrt(sum(d * d for d in diff) / sum(r * r for r in ref[1:]))
    return {"engine": scorer.engine, "tokens": len(ids), "lanes": [len(p) for p in pieces],
            "max_abs": max(diff), "rel_l2": rel, "ref_std": statistics.pstdev(ref[1:]),
            "nan": any(math.isnan(x) for x in fast[1:]),
            "runs_max_abs": max(abs(a - b) for r in runs[:-1] for a, b in zip(r[1:], fast[1:]))}


def lse_bench(device, vocab: int, rows: int) -> list[dict]:
    """The output layer's logsumexp - target on one chunk of bf16 logits: Triton kernel
    variants against torch (compiled and eager); error against float64."""
    import torch
    import triton.testing

    from catp.scoring import _lse_triton
    from catp.scoring.lm import _lse_minus_target

    gen = torch.Generator(device=device).manual_seed(2)
    logits = (torch.randn(rows, vocab, generator=gen, device=device) * 4).to(torch.bfloat16)
    targets = torch.randint(0, vocab, (rows,), generator=gen, device=device)
    ref = (torch.logsumexp(logits.double(), -1) - logits.double().gather(1, targets[:, None])[:, 0])
    compiled = torch.compile(_lse_minus_target, dynamic=True)
    fns = {"eager": _lse_minus_target, "compiled": compiled}
    for block, warps in ((2048, 4), (4096, 8), (8192, 8), (8192, 16), (16384, 16)):
        fns[f"triton_{block}_{warps}"] = (lambda b, w: lambda x, t: _lse_triton.lse_minus_target(x, t, b, w))(block, warps)
    out = []
    gb = logits.numel() * logits.element_size() / 1e9
    for name, fn in fns.items():
        try:
            got = fn(logits, targets)
            err = (got.double() - ref).abs().max().item()
            ms = triton.testing.do_bench(lambda: fn(logits, targets), warmup=50, rep=300, return_mode="median")
            out.append({"lse": name, "ms": ms, "GB_per_s": gb / (ms / 1e3), "max_abs_err": err})
        except Exception as exc:  # one failing variant must not stop the run
            out.append({"lse": name, "error": repr(exc)[:300]})
        print(json.dumps(out[-1]), flush=True)
    return out


def attn_bench(device) -> list[dict]:
    """Causal attention alone, Qwen1.5-0.5B's heads (16 x 64), bf16: SDPA's backends and the
    direct FlashAttention call, square (a window) and bottom-right (a chunk after a cache)."""
    import torch
    import triton.testing
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    F = torch.nn.functional
    out = []
    for b, t, s in ((16, 4096, 4096), (16, 2048, 2048), (16, 1024, 2048), (16, 3072, 4096)):
        q = torch.randn(b, t, 16, 64, device=device, dtype=torch.bfloat16).transpose(1, 2)
        k = torch.randn(b, s, 16, 64, device=device, dtype=torch.bfloat16).transpose(1, 2)
        v = torch.randn(b, s, 16, 64, device=device, dtype=torch.bfloat16).transpose(1, 2)
        # useful FLOPs: each query i sees s - t + i + 1 keys; 4 * d per key per head
        flop = 4 * 64 * 16 * b * sum(s - t + i + 1 for i in range(t))
        fns = {"flash_op": lambda: torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True, False)[0]}
        if s == t:
            fns["sdpa_default"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
            for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                             ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                fns[f"sdpa_{name}"] = (lambda be: lambda: _with_backend(sdpa_kernel, be, F, q, k, v, None))(be)
        else:
            bias = causal_lower_right(t, s)
            fns["sdpa_lower_right"] = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            mask = torch.ones(t, s, dtype=torch.bool, device=device).tril(s - t)
            for name, be in (("efficient", SDPBackend.EFFICIENT_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                fns[f"sdpa_{name}_mask"] = (lambda be: lambda: _with_backend(sdpa_kernel, be, F, q, k, v, mask))(be)
        ref = fns["flash_op"]()
        for name, fn in fns.items():
            try:
                err = (fn().float() - ref.float()).abs().max().item()
                ms = triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median")
                row = {"attn": name, "b": b, "t": t, "s": s, "ms": ms, "tflops": flop / ms / 1e9, "max_abs_vs_flash": err}
            except Exception as exc:
                row = {"attn": name, "b": b, "t": t, "s": s, "error": repr(exc)[:200]}
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def _with_backend(sdpa_kernel, be, F, q, k, v, mask):
    with sdpa_kernel([be]):
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def torch_profile(scorer, ids, top: int = 22) -> str:
    """Kernel time of one pass, by kernel (torch.profiler)."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile

    scorer.token_nll(ids)
    torch.cuda.synchronize()
    with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        scorer.token_nll(ids)
        torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=top, max_name_column_width=70)


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
    ap.add_argument("--engine", default="auto", help="hf, fused, lanes or auto (with --variants)")
    ap.add_argument("--configs", default=None,
                    help="instead of the product: engine:compile:window:overlap[:lanes[:batch]] items, comma separated")
    ap.add_argument("--no-check", action="store_true", help="skip the float32 correctness checks")
    ap.add_argument("--check-tokens", type=int, default=6144, help="tokens for the per-engine check")
    ap.add_argument("--lse-bench", action="store_true", help="time logsumexp variants on one logits chunk")
    ap.add_argument("--lse-rows", type=int, default=3532)
    ap.add_argument("--attn-bench", action="store_true", help="time attention kernels alone")
    ap.add_argument("--torch-profile", type=int, default=0, help="print torch.profiler's kernel table for the first N configs")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch

    from catp.scoring.lm import LMScorer, pick_device
    from catp.scoring.model_source import load_tokenizer

    tiny_tok = Path(__file__).resolve().parents[1] / "tests"
    sys.path.insert(0, str(tiny_tok))
    from tiny_qwen import (
        build_tokenizer,  # the token ids below are random; a tokenizer object is required
    )

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

    dt_name = str(dtype).split(".")[-1]
    checks = {}
    if not args.no_check:
        scorer = LMScorer(model, tokenizer=tokenizer, device=str(device), dtype=dt_name, engine="hf",
                          compile="auto" if on_gpu else False, window=4096, overlap=1024, max_tokens=10**9)
        checks["hf_first_window"] = check(scorer, model, ids, min(4096, args.tokens))
        print("check vs float32 reference (first window):", json.dumps(checks["hf_first_window"]), flush=True)
        del scorer

    if args.attn_bench and on_gpu:
        checks["attn_bench"] = attn_bench(device)

    if args.lse_bench and on_gpu:
        checks["lse_bench"] = lse_bench(device, QWEN15_05B["vocab_size"], args.lse_rows)

    configs = []
    if args.configs:
        for item in args.configs.split(","):
            f = item.strip().split(":")
            configs.append(dict(engine=f[0], compile=f[1], window=None if f[2] == "-" else int(f[2]),
                                overlap=None if f[3] == "-" else int(f[3]),
                                lanes=int(f[4]) if len(f) > 4 and f[4] else None,
                                batch_tokens=int(f[5]) if len(f) > 5 else int(args.batch_tokens.split(",")[0])))
    else:
        for comp in args.compile.split(","):
            for bt in [int(b) for b in args.batch_tokens.split(",")]:
                for var in args.variants.split(","):
                    window, overlap = (int(x) for x in var.split(":"))
                    configs.append(dict(engine=args.engine, compile=comp, window=window, overlap=overlap,
                                        lanes=None, batch_tokens=bt))

    rows = []
    checked = set()
    for cfg in configs:
        # experiments: static (compiled, static shapes), autotune (max-autotune-no-cudagraphs),
        # and a "+SQUARE/CACHED" suffix: the own decoder's attention kernels (see catp/scoring/fastlm.py)
        comp_name = cfg["compile"].strip().lower()
        attention = None
        if "+" in comp_name:
            comp_name, att = comp_name.split("+", 1)
            attention = tuple(att.split("/"))
        special = comp_name if comp_name in ("static", "autotune") else None
        comp_v = {"false": False, "auto": "auto", "true": True, "static": False, "autotune": False}[comp_name]
        kw = dict(tokenizer=tokenizer, device=str(device), dtype=dt_name, compile=comp_v, engine=cfg["engine"],
                  window=cfg["window"], overlap=cfg["overlap"], max_tokens=10**9, batch_tokens=cfg["batch_tokens"])
        try:
            gc.collect()
            if on_gpu:
                torch.cuda.empty_cache()
            if not args.no_check and cfg["engine"] + cfg["compile"] not in checked:
                # a few thousand tokens, two lanes: the cache path runs, the reference stays small
                checked.add(cfg["engine"] + cfg["compile"])
                try:
                    small = LMScorer(model, lanes=2, **kw)
                    if attention and small.decoder is not None:
                        small.decoder.square, small.decoder.cached = attention
                    c = check_engine(small, model, ids[:min(len(ids), args.check_tokens)])
                    del small
                except Exception as exc:
                    c = {"engine": cfg["engine"], "error": repr(exc)[:400]}
                checks[f"{cfg['engine']}_{cfg['compile']}_vs_hf_float32"] = c
                print("check vs transformers float32 (same windows/lanes):", json.dumps(c), flush=True)
                gc.collect()
            scorer = LMScorer(model, lanes=cfg["lanes"], **kw)
            if scorer.decoder is not None:
                if special == "static":
                    scorer.decoder.compile(dynamic=False)
                elif special == "autotune":
                    scorer.decoder.compile(dynamic=False, mode="max-autotune-no-cudagraphs")
                if attention:
                    scorer.decoder.square, scorer.decoder.cached = attention
            fed = scorer.fed_tokens(scorer.plan(len(ids), [(1, len(ids))]))
            t_w = time.perf_counter()
            scorer.token_nll(ids)  # warm-up (compiles, if asked)
            warm = time.perf_counter() - t_w
            times = []
            if on_gpu:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats(device)
            pauses = []  # the garbage collector's pauses inside each timed run (gen, seconds)
            gc_start = {}

            def on_gc(phase, info):
                if phase == "start":
                    gc_start["t"] = time.perf_counter()
                elif "t" in gc_start:
                    pauses.append((info["generation"], time.perf_counter() - gc_start.pop("t")))

            gc.callbacks.append(on_gc)
            per_run_gc = []
            for _ in range(args.repeat):
                pauses.clear()
                t = time.perf_counter()
                nll = scorer.token_nll(ids)
                if on_gpu:
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
                per_run_gc.append([round(sum(p for _, p in pauses), 4), max((g for g, _ in pauses), default=None)])
            gc.callbacks.remove(on_gc)
            peak = torch.cuda.max_memory_allocated(device) / 2**30 if on_gpu else float("nan")
            med = statistics.median(times)
            row = dict(engine=scorer.engine, compile=cfg["compile"], lanes=scorer.lanes_cap(scorer.window)
                       if scorer.engine == "lanes" else None, batch_tokens=cfg["batch_tokens"],
                       window=scorer.window, overlap=scorer.overlap, tokens=len(ids),
                       fed=fed, fed_ratio=fed / len(ids), median_s=med, min_s=min(times),
                       spread_s=max(times) - min(times), tok_per_s=len(ids) / med, peak_gib=peak,
                       warmup_s=warm, nan=sum(math.isnan(x) for x in nll[1:]),
                       runs_s=[round(x, 4) for x in times], gc_per_run=per_run_gc)
            if args.profile and on_gpu:
                row["profile"] = profile(scorer, ids)
            if len(rows) < args.torch_profile and on_gpu:
                print(f"torch.profiler, {cfg}:\n" + torch_profile(scorer, ids), flush=True)
            del scorer
        except Exception as exc:  # one failing configuration must not stop the others
            import traceback

            traceback.print_exc()
            row = dict(engine=cfg["engine"], compile=cfg["compile"], lanes=cfg["lanes"], window=cfg["window"],
                       overlap=cfg["overlap"], batch_tokens=cfg["batch_tokens"], error=repr(exc)[:400])
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


    print(f"\n{'engine':7} {'compile':8} {'lanes':>5} {'batch':>6} {'win:ovl':>10} {'fed':>5} {'median s':>9} "
          f"{'tok/s':>10} {'peak GiB':>8} {'warm s':>7} {'128K est s':>10}")
    for r in rows:
        if "error" in r:
            print(f"{r['engine']:7} {r['compile']:8} {str(r.get('lanes')):>5} {r.get('batch_tokens', '-'):>6} "
                  f"{str(r['window']) + ':' + str(r['overlap']):>10} ERROR {r['error'][:60]}")
            continue
        est = 131072 / r["tok_per_s"]
        print(f"{r.get('engine', '-'):7} {r['compile']:8} {str(r.get('lanes', '-')):>5} {r.get('batch_tokens', '-'):>6} "
              f"{str(r['window']) + ':' + str(r['overlap']):>10} "
              f"{r.get('fed_ratio', float('nan')):5.2f} {r['median_s']:9.3f} {r['tok_per_s']:10.0f} "
              f"{r['peak_gib']:8.2f} {r.get('warmup_s', float('nan')):7.1f} {est:10.3f}")
        if "profile" in r:
            print("        profile:", json.dumps({k: (round(v, 4) if isinstance(v, float) else v)
                                                 for k, v in r["profile"].items()}))
    import transformers

    meta = {"torch": torch.__version__, "transformers": transformers.__version__,
            "gpu": torch.cuda.get_device_name(device) if on_gpu else None}
    print("versions:", json.dumps(meta))
    out = args.json or (os.path.join(os.environ["OUT"], "bench_scorer.json") if os.environ.get("OUT") else None)
    if out:
        Path(out).write_text(json.dumps({"rows": rows, "check": checks, "floor_s": floor, "params": n_params,
                                               **meta}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
