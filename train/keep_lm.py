"""Gemma 3 270M as a unit classifier: P(an expert keeps this unit). Runs on the lent GPU (an experiment).

    python3 train/keep_lm.py --data .keeplm --dev .keeplm_dev --out $OUT/eval_all.json [--exclude CORPUS]

Inputs: .keeplm/{train,eval}.jsonl (documents with units, deleted, y, weight); .keeplm_dev/tok.npz (every
document tokenized on the CPU machine with return_offsets_mapping, token ids remapped to the vocabulary the
documents use); .keeplm_dev/config.json and the weights (Gemma 3 270M from its Q4_K_M GGUF, dequantized,
embedding rows cut to that vocabulary, stored as int8 with one scale per row).
Model: Gemma's decoder (last layer's hidden states, final norm included) + hand-written LoRA (rank 16) on
q/k/v/o/gate/up/down; a unit = mean of its tokens' hidden states (a token counts for every unit its characters
overlap); a linear head -> logit; loss = weighted BCE over non-deleted units. Windows of up to 2048 tokens,
BOS first; a unit cut by a window boundary pools its tokens from both windows.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

WINDOW = 2048
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoRA(nn.Module):
    def __init__(self, base: nn.Linear, r: int, alpha: float):
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.randn(r, base.in_features) / math.sqrt(base.in_features))
        self.b = nn.Parameter(torch.zeros(base.out_features, r))
        self.scale = alpha / r

    def forward(self, x):
        y = self.base(x)
        return y + (F.linear(F.linear(x.float(), self.a), self.b) * self.scale).to(y.dtype)


def load_docs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def unit_pairs(off: np.ndarray, units: list) -> tuple[np.ndarray, np.ndarray]:
    """(token index, unit index) for every token whose characters overlap a unit (nearest token if none)."""
    starts, ends = off[:, 0], off[:, 1]
    ends_sorted = np.maximum.accumulate(ends)
    toks, us = [], []
    n = len(off)
    for i, (s, e) in enumerate(units):
        first = int(np.searchsorted(ends_sorted, s, side="right"))
        last = int(np.searchsorted(starts, e, side="left"))
        if last <= first:
            first, last = min(first, n - 1), min(first, n - 1) + 1
        idx = np.arange(first, last)
        toks.append(idx)
        us.append(np.full(len(idx), i))
    return np.concatenate(toks), np.concatenate(us)


def prepare(doc: dict, tok: np.lib.npyio.NpzFile, bos: int) -> dict:
    ids = tok[doc["id"] + "|ids"].astype(np.int64)
    off = tok[doc["id"] + "|off"].astype(np.int64)
    t, u = unit_pairs(off, doc["units"])
    wins, pos = [], np.zeros(len(ids), np.int64)  # pos: flat position of each token in the concatenated windows
    flat = 0
    for w, s in enumerate(range(0, len(ids), WINDOW - 1)):
        chunk = ids[s:s + WINDOW - 1]
        wins.append(np.concatenate([[bos], chunk]))
        pos[s:s + len(chunk)] = flat + 1 + np.arange(len(chunk))
        flat += len(chunk) + 1
    return {"id": doc["id"], "wins": wins, "tok": pos[t], "unit": u, "n": len(doc["units"]),
            "y": np.array(doc.get("y") or [0] * len(doc["units"]), np.float32),
            "w": np.array(doc.get("weight") or [1] * len(doc["units"]), np.float32),
            "live": ~np.array(doc["deleted"], bool), "ntok": len(ids)}


class KeepLM(nn.Module):
    def __init__(self, decoder: nn.Module, hidden: int):
        super().__init__()
        self.decoder = decoder
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, 1)

    def hidden(self, wins: list[np.ndarray], dev) -> torch.Tensor:
        """Last hidden states of every window, concatenated: [sum of window lengths, hidden]."""
        outs = []
        full = [w for w in wins if len(w) == WINDOW]
        rest = [w for w in wins if len(w) != WINDOW]
        order = []
        for group in ([full] if full else []) + [[w] for w in rest]:
            x = torch.tensor(np.stack(group), device=dev)
            h = self.decoder(input_ids=x).last_hidden_state
            outs.extend(h.unbind(0))
        # put back in the original window order (full windows come first in a document anyway)
        return torch.cat(outs, 0)

    def forward(self, d: dict, dev) -> torch.Tensor:
        h = self.hidden(d["wins"], dev).float()
        tok = torch.as_tensor(d["tok"], device=dev)
        unit = torch.as_tensor(d["unit"], device=dev)
        sums = torch.zeros(d["n"], h.shape[1], device=dev).index_add_(0, unit, h[tok])
        cnt = torch.zeros(d["n"], device=dev).index_add_(0, unit, torch.ones_like(unit, dtype=torch.float32))
        rep = sums / cnt.clamp_min(1).unsqueeze(1)
        return self.head(self.norm(rep)).squeeze(1)


def build_model(dev_dir: Path, dev, rank: int, full: bool):
    from safetensors.torch import load_file
    from transformers import Gemma3TextConfig, Gemma3TextModel

    cfg = json.loads((dev_dir / "config.json").read_text())
    for k in ("architectures", "dtype", "torch_dtype", "transformers_version", "_name_or_path"):
        cfg.pop(k, None)
    config = Gemma3TextConfig(**{k: v for k, v in cfg.items() if k != "model_type"})
    config._attn_implementation = "sdpa"
    weights = {}
    for f in sorted(dev_dir.glob("w8*.safetensors")):
        weights.update(load_file(str(f)))
    sd = {}
    for k, v in weights.items():
        if k.endswith(".q"):
            sd[k[:-2]] = v.float() * weights[k[:-2] + ".s"].unsqueeze(1)
        elif not k.endswith(".s"):
            sd[k] = v
    sd = {k.removeprefix("model."): v for k, v in sd.items()}
    with torch.device(dev):
        dec = Gemma3TextModel(config)
    missing, unexpected = dec.load_state_dict(sd, strict=False)
    assert not [k for k in missing if "rotary" not in k] and not unexpected, (missing, unexpected)
    dec = dec.to(dev, torch.bfloat16)
    dec.config.use_cache = False
    for p in dec.parameters():
        p.requires_grad_(full)
    if not full:
        for name, mod in list(dec.named_modules()):
            for t in TARGETS:
                child = getattr(mod, t, None)
                if isinstance(child, nn.Linear):
                    setattr(mod, t, LoRA(child, rank, 2 * rank).to(dev))
    return dec, config.hidden_size


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = labels > 0.5, labels <= 0.5
    if pos.sum() == 0 or neg.sum() == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    s = scores[order]
    i = 0
    while i < len(s):  # average ranks of ties
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * neg.sum()))


@torch.no_grad()
def predict(model: KeepLM, docs: list[dict], dev) -> dict:
    model.eval()
    out = {}
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev.type == "cuda"):
        for d in docs:
            out[d["id"]] = torch.sigmoid(model(d, dev).float()).cpu().numpy()
    model.train()
    return out


@torch.no_grad()
def time_128k(model: KeepLM, docs: list[dict], dev, bos: int) -> dict:
    """Forward only (bf16) over 128K tokens: eval documents' tokens concatenated, cut into 2048-token windows."""
    ids = np.concatenate([np.concatenate([w[1:] for w in d["wins"]]) for d in docs])
    while len(ids) < 131072:
        ids = np.concatenate([ids, ids])
    ids = ids[:131072]
    wins = [np.concatenate([[bos], ids[s:s + WINDOW - 1]]) for s in range(0, len(ids), WINDOW - 1)]
    n_units = 131072 // 40
    fake = {"wins": wins, "tok": np.arange(sum(len(w) for w in wins)),
            "unit": np.minimum(np.arange(sum(len(w) for w in wins)) // 40, n_units - 1), "n": n_units}
    model.eval()
    res = {}
    for label, batch in (("batched", None), ("one_window_at_a_time", 1)):
        def run():
            if batch is None:
                return model(fake, dev)
            return [model({**fake, "wins": [w], "tok": np.arange(len(w)), "unit": np.arange(len(w)) // 40,
                           "n": (len(w) + 39) // 40}, dev) for w in wins]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            run()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(3):
                run()
            if dev.type == "cuda":
                torch.cuda.synchronize()
        res[label] = (time.perf_counter() - t0) / 3
    model.train()
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=".keeplm")
    ap.add_argument("--dev", default=".keeplm_dev")
    ap.add_argument("--out", required=True)
    ap.add_argument("--exclude", default=None)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--docs-per-step", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-train-s", type=float, default=400)
    ap.add_argument("--time128k", action="store_true")
    ap.add_argument("--save", default=None)
    ap.add_argument("--limit", type=int, default=0, help="debug: this many training documents")
    ap.add_argument("--eval-limit", type=int, default=0, help="debug: this many eval documents")
    args = ap.parse_args()

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data, dev_dir = Path(args.data), Path(args.dev)
    t0 = time.time()
    tok = np.load(dev_dir / "tok.npz")
    bos = int(tok["bos"][0])
    train_raw = load_docs(data / "train.jsonl")
    eval_raw = load_docs(data / "eval.jsonl")
    if args.eval_limit:
        eval_raw = eval_raw[: args.eval_limit]
    held_raw = [d for d in train_raw if args.exclude and d["corpus"].startswith(args.exclude)]
    train_raw = [d for d in train_raw if not (args.exclude and d["corpus"].startswith(args.exclude))]
    if args.limit:
        train_raw, held_raw = train_raw[: args.limit], held_raw[:3]
    if args.exclude:
        assert held_raw, f"no training document of corpus {args.exclude}"
    train = [prepare(d, tok, bos) for d in train_raw]
    held = [prepare(d, tok, bos) for d in held_raw]
    evals = [prepare(d, tok, bos) for d in eval_raw]
    print(f"[{args.exclude or 'all'}] train {len(train)} docs {sum(d['ntok'] for d in train)} tokens; held {len(held)}; "
          f"eval {len(evals)}; prep {time.time() - t0:.1f}s", flush=True)

    dec, hidden = build_model(dev_dir, dev, args.rank, args.full)
    model = KeepLM(dec, hidden).to(dev)
    print(f"model built {time.time() - t0:.1f}s", flush=True)
    lora = [p for n, p in model.decoder.named_parameters() if p.requires_grad]
    head = list(model.norm.parameters()) + list(model.head.parameters())
    opt = torch.optim.AdamW([{"params": lora, "lr": args.lr}, {"params": head, "lr": args.head_lr}],
                            weight_decay=0.0 if not args.full else 0.01)
    steps_total = args.epochs * math.ceil(len(train) / args.docs_per_step)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * max(0.05, 1 - s / max(1, steps_total)))
    t_train = time.time()
    step = 0
    stopped = False
    for ep in range(args.epochs):
        order = list(range(len(train)))
        random.shuffle(order)
        tot, cnt = 0.0, 0
        for i in range(0, len(order), args.docs_per_step):
            loss_sum, w_sum = 0.0, 0.0
            for j in order[i:i + args.docs_per_step]:
                d = train[j]
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev.type == "cuda"):
                    logit = model(d, dev).float()
                live = torch.as_tensor(d["live"], device=dev)
                y = torch.as_tensor(d["y"], device=dev)[live]
                w = torch.as_tensor(d["w"], device=dev)[live]
                if live.sum() == 0:
                    continue
                loss = (F.binary_cross_entropy_with_logits(logit[live], y, reduction="none") * w).sum()
                loss_sum = loss_sum + loss
                w_sum += float(w.sum())
            if w_sum == 0:
                continue
            (loss_sum / w_sum).backward()
            torch.nn.utils.clip_grad_norm_(lora + head, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            tot += float(loss_sum)
            cnt += w_sum
            step += 1
            if time.time() - t_train > args.max_train_s:
                stopped = True
                break
        print(f"epoch {ep + 1} loss {tot / max(cnt, 1):.4f} {time.time() - t_train:.1f}s", flush=True)
        if stopped:
            print("stopped early: time budget", flush=True)
            break
    train_s = time.time() - t_train
    summary = {"exclude": args.exclude, "train_docs": len(train), "train_tokens": int(sum(d["ntok"] for d in train)),
               "epochs_done": ep + 1, "steps": step, "train_s": round(train_s, 1), "stopped_early": stopped,
               "lr": args.lr, "rank": args.rank, "full": args.full, "seed": args.seed}

    t1 = time.time()
    preds = predict(model, evals + held, dev)
    summary["predict_s"] = round(time.time() - t1, 1)
    if held:
        s = np.concatenate([preds[d["id"]][d["live"]] for d in held])
        y = np.concatenate([d["y"][d["live"]] for d in held])
        per_doc = [auc(preds[d["id"]][d["live"]], d["y"][d["live"]]) for d in held]
        per_doc = [a for a in per_doc if not math.isnan(a)]
        summary["heldout_unit_auc"] = round(auc(s, y), 4)
        summary["heldout_mean_doc_auc"] = round(float(np.mean(per_doc)), 4) if per_doc else None
        summary["heldout_units"] = int(len(y))
        summary["heldout_pos"] = int((y > 0.5).sum())
        print(f"HELDOUT {args.exclude}: unit AUC {summary['heldout_unit_auc']} (mean per-doc "
              f"{summary['heldout_mean_doc_auc']}, {len(y)} units, {int((y > .5).sum())} positive)", flush=True)
    out = {k: [round(float(p), 5) for p in v] for k, v in preds.items()}
    Path(args.out).write_text(json.dumps(out))
    if args.time128k:
        try:
            res = time_128k(model, evals, dev, bos)
            summary["seconds_per_128k_tokens"] = {k: round(v, 4) for k, v in res.items()}
            print(f"TIMING seconds per 128K tokens (forward, bf16, 2048-token windows): {res}", flush=True)
        except Exception as e:  # the timing must not cost the predictions
            print(f"TIMING failed: {e!r}", flush=True)
    Path(args.out).with_suffix(".summary.json").write_text(json.dumps(summary, indent=1))
    if args.save:
        from safetensors.torch import save_file
        tensors = {"decoder." + n: p.detach().to(torch.bfloat16).contiguous().cpu()
                   for n, p in model.decoder.named_parameters() if p.requires_grad}
        tensors.update({n: p.detach().float().cpu().contiguous() for n, p in model.named_parameters()
                        if n.startswith(("norm.", "head."))})
        size = sum(t.numel() * t.element_size() for t in tensors.values())
        if size < 16 * 2**20:
            save_file(tensors, args.save, metadata={"rank": str(args.rank), "alpha": str(2 * args.rank)})
        print(f"weights {size / 2**20:.1f} MiB {'saved' if size < 16 * 2**20 else 'too big, not saved'}")
    print("SUMMARY " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
