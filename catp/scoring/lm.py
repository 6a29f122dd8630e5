"""`LMScorer`: per-token self-information (-log p) from a local causal LM.

Default model: Qwen/Qwen1.5-0.5B (any safetensors causal LM of transformers
works). bf16 on a CUDA GPU, float32 on the CPU. Long documents run in equal
windows that overlap so each scored token has `overlap` tokens of left context;
windows are batched. Only the scored positions go through the output layer, in
row chunks, and only the target token's log-prob is kept (gathered logit minus
logsumexp): no full-vocabulary float32 softmax over the sequence, so memory is
bounded by the batch and the chunk, not by the document (128K+ tokens is fine).

Engines (`engine=`): `hf` runs transformers' forward on each window; `fused` runs
the scorer's own decoder (`catp.scoring.fastlm`: fused projections) on each
window; `lanes` (the default on CUDA for Qwen2/Llama models) also keeps the
keys/values of the last `overlap` tokens of a window, so that the next window of
its lane feeds only its new tokens (see `plan_lanes` and docs/scorer.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from catp.errors import ModelError
from catp.scoring.logprobs import (
    COMMON_OPTIONS,
    QUESTION_TEMPLATE,
    SelfInformationScorer,
    Window,
    even_batches,
    leading_special_token,
    needed_ranges,
    plan_lanes,
    split_options,
)
from catp.scoring.model_source import DEFAULT_MODEL, load_tokenizer, prepare_model

# With no GPU, `max_tokens` defaults to this many model tokens (about a minute on
# 2 cores for Qwen1.5-0.5B; see docs/benchmarks.md). Units beyond get a fallback.
CPU_MAX_TOKENS = 2048
GPU_BATCH_TOKENS = 65536
WINDOW = 4096
# engine="lanes": default window and context (each chunk of window - context new tokens
# attends to the lane's previous context tokens), and lanes side by side (at most
# batch_tokens // window); measured on an H200 in docs/benchmarks.md, "LM scorer"
LANES_WINDOW = 2048
LANES_CONTEXT = 1024
LANES = 8
ENGINES = ("auto", "hf", "fused", "lanes")
CPU_BATCH_TOKENS = 4096
# bytes one chunk of the output layer may use (logits plus float32 temporaries)
HEAD_CHUNK_BYTES = 1 << 30
_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
           "half": "float16", "float32": "float32", "fp32": "float32", "float": "float32"}


def _import_torch():
    try:
        import torch
        import transformers
    except ImportError:
        raise ModelError("the lm scorer needs torch and transformers: pip install 'catp[lm]'") from None
    return torch, transformers


def pick_device(device: str | None):
    """torch.device from an option: None/'auto' = the CUDA GPU if there is one, else the CPU."""
    torch, _ = _import_torch()
    if device is None or str(device).strip().lower() in ("", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(str(device))
    except (RuntimeError, ValueError):
        raise ModelError(f"unknown device {device!r}: use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ModelError(f"device {device} asked for, but torch sees no CUDA GPU")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ModelError(f"device {device} asked for, but torch sees {torch.cuda.device_count()} GPU(s)")
    return dev


def _lse_minus_target(logits, targets):
    """-log p(target) per row: logsumexp over the vocabulary minus the target logit, in float32."""
    import torch

    tgt = logits.gather(1, targets.unsqueeze(1)).squeeze(1).float()
    return torch.logsumexp(logits.float(), dim=-1) - tgt


class LMScorer(SelfInformationScorer):
    """Rank units by the mean (or max) surprisal of their tokens under a small causal LM.

    With `question=`, rank by how much the unit lowers the question's surprisal
    (see `SelfInformationScorer._score_question`).
    """

    name = "lm"
    OPTIONS = ("model", "sha256", "device", "dtype", "allow_download", "compile", "engine", "lanes", *COMMON_OPTIONS)

    def __init__(self, model: Any = DEFAULT_MODEL, *, tokenizer: Any = None, sha256: str | None = None,
                 device: str | None = None, dtype: str | None = None, allow_download: bool | None = None,
                 compile: bool | str = "auto", engine: str = "auto", lanes: int | str | None = None,
                 window: int | None = None, overlap: int | None = None, stride: int | None = None,
                 aggregate: str = "mean", max_tokens: int | None = None, batch_tokens: int | None = None,
                 question_template: str = QUESTION_TEMPLATE) -> None:
        torch, transformers = _import_torch()
        self.device = pick_device(device)
        on_gpu = self.device.type == "cuda"
        if dtype is None:
            self.dtype = torch.bfloat16 if on_gpu else torch.float32
        elif str(dtype).lower() in _DTYPES:
            self.dtype = getattr(torch, _DTYPES[str(dtype).lower()])
        else:
            raise ModelError(f"unknown scorer dtype {dtype!r}: use bfloat16, float16 or float32")
        if max_tokens is None and not on_gpu:
            max_tokens = CPU_MAX_TOKENS
        opts = dict(overlap=overlap, stride=stride, aggregate=aggregate, max_tokens=max_tokens,
                    batch_tokens=batch_tokens or (GPU_BATCH_TOKENS if on_gpu else CPU_BATCH_TOKENS),
                    question_template=question_template)
        super().__init__(window=WINDOW if window is None else window, **opts)  # bad options fail before loading

        if isinstance(model, torch.nn.Module):  # already loaded (benchmarks, tests)
            if tokenizer is None:
                raise ModelError("a loaded model needs its tokenizer (tokenizers.Tokenizer)")
            self.model_source = type(model).__name__
            self.model = model.to(device=self.device, dtype=self.dtype)
        else:
            folder = prepare_model(str(model), sha256=sha256, allow_download=allow_download)
            self.model_source = str(model)
            tokenizer = tokenizer or load_tokenizer(folder)
            self.model = self._load(folder, transformers)
        self.tokenizer = tokenizer
        self.bos_id = leading_special_token(tokenizer)  # Gemma: every row it is fed starts with <bos>
        self.model.eval().requires_grad_(False)
        cfg = self.model.config
        for attr in ("final_logit_softcapping", "logit_scale", "output_multiplier_scale"):
            if getattr(cfg, attr, None) not in (None, 1, 1.0):
                raise ModelError(f"scorer model {self.model_source}: {attr} is not supported")
        # a window and its BOS column fit the positions the model knows
        self.max_len = int(getattr(cfg, "max_position_embeddings", None) or 2048) - int(self.bos_id is not None)
        self._base = self.model.base_model
        self._head = self.model.get_output_embeddings()
        if self._head is None:
            raise ModelError(f"scorer model {self.model_source} has no output layer (not a causal LM)")
        vocab = self._head.weight.shape[0]
        compile = _compile_mode(compile)
        self.engine = self._pick_engine(engine)
        self.lanes = _lanes_option(lanes)
        if self.engine == "lanes" and window is None:  # lanes default to short windows: see docs/scorer.md
            if overlap is None and stride is None:
                opts["overlap"] = LANES_CONTEXT
            super().__init__(window=LANES_WINDOW, **opts)
        self.decoder = None  # the own decoder (catp.scoring.fastlm.FusedDecoder) of engines fused and lanes
        if self.engine in ("fused", "lanes"):
            from catp.scoring.fastlm import FusedDecoder

            self.decoder = FusedDecoder(self.model, compile=compile is True and on_gpu)
        self._lse = _lse_minus_target
        bytes_per_row = vocab * (2 + 4 + 4 + 4)  # logits, float32 copy, exp temporaries
        if on_gpu:
            self._lse = _triton_lse(torch, self.device) or _lse_minus_target
            if compile and self._lse is _lse_minus_target:
                self._compile_lse(torch)
            if compile is True and self.engine == "hf":
                self._compile_layers()
            if self._lse is not _lse_minus_target:
                bytes_per_row = vocab * self._head.weight.element_size()
        self._chunk_rows = max(16, HEAD_CHUNK_BYTES // bytes_per_row)

    @classmethod
    def from_options(cls, **opts: Any) -> LMScorer:
        """Build from CLI/registry options; None means "default"; `stride` or `overlap`."""
        own = split_options(opts, cls.OPTIONS, cls.name)
        return cls(**own)

    # --- loading -----------------------------------------------------------------
    def _load(self, folder, transformers):
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            model = AutoModelForCausalLM.from_pretrained(
                folder, dtype=self.dtype, attn_implementation="sdpa", use_safetensors=True,
                trust_remote_code=False, local_files_only=True,
            )
        except (OSError, ValueError, KeyError, RuntimeError, ImportError, TypeError) as err:
            msg = (str(err).strip() or type(err).__name__).splitlines()[0]
            raise ModelError(f"cannot load scorer model {self.model_source}: {msg}") from None
        finally:
            if bar:
                hf_logging.enable_progress_bar()
        return model.to(self.device)

    def _pick_engine(self, engine: str) -> str:
        """`auto`: lanes on CUDA when the model is one `fastlm` runs, else transformers (`hf`)."""
        from catp.scoring.fastlm import unsupported_reason

        value = str(engine or "auto").strip().lower()
        if value not in ENGINES:
            raise ModelError(f"scorer engine must be one of {', '.join(ENGINES)}; got {engine!r}")
        reason = unsupported_reason(self.model)
        if reason is None and self.bos_id is not None:
            reason = "its tokenizer starts every sequence with a BOS token, which the own decoder does not add"
        if value == "auto":
            return "lanes" if self.device.type == "cuda" and reason is None else "hf"
        if value != "hf" and reason is not None:
            raise ModelError(f"scorer engine {value} cannot run {self.model_source}: {reason}")
        return value

    def _compile_lse(self, torch) -> None:
        """Fuse the logsumexp with torch.compile (when the Triton kernel is not there)."""
        try:
            self._lse = torch.compile(_lse_minus_target, dynamic=True)
        except Exception:  # no triton / no compiler: eager still gives the same numbers
            self._lse = _lse_minus_target

    def _compile_layers(self) -> None:
        try:
            for layer in getattr(self._base, "layers", []):
                layer.compile()
        except Exception:
            pass

    def fed_tokens(self, windows: Sequence[Window]) -> int:
        """Tokens the decoder is fed: with lanes, a window that continues its lane feeds only
        its new tokens."""
        if self.engine != "lanes":
            return super().fed_tokens(windows)
        return sum(p[0].end - p[0].start + sum(w.end - prev.end for prev, w in zip(p, p[1:]))
                   for p in self.lane_pieces(windows))

    def lane_pieces(self, windows: Sequence[Window]) -> list[list[Window]]:
        """The windows grouped by lane (plan_lanes): with engine lanes, each window after a piece's first
        reuses the previous window's keys and values. Other engines: one window a piece."""
        if self.engine != "lanes" or not windows:
            return [[w] for w in windows]
        length = windows[0].end - windows[0].start
        return plan_lanes(windows, max(self.overlap, 1), self.lanes_cap(length), self.max_len)

    # --- backend hooks -------------------------------------------------------------
    def _nll_windows(self, ids, windows: Sequence[Window], needed) -> list[float]:
        if self.decoder is not None and windows:
            return self._nll_lanes(ids, windows, needed)
        torch = _import_torch()[0]
        n = len(ids)
        if not windows:
            return [math.nan] * n
        dev = self.device
        ids_dev = torch.from_numpy(_id_array(ids)).to(dev)
        out = torch.full((n,), math.nan, dtype=torch.float32, device=dev)
        length = windows[0].end - windows[0].start
        lead = int(self.bos_id is not None)  # a BOS column before each window
        width = length + lead
        starts = [a for a, _ in needed]
        arange = torch.arange(length, device=dev)
        for batch in even_batches(windows, max(1, self.batch_tokens // length)):
            pos_parts, flat_parts = [], []
            for b, w in enumerate(batch):
                for lo, hi in needed_ranges(needed, starts, w.score_from, w.end):
                    r = torch.arange(lo, hi)
                    pos_parts.append(r)
                    flat_parts.append(r + (b * width - w.start - 1 + lead))
            if not pos_parts:
                continue
            rows = ids_dev[torch.as_tensor([w.start for w in batch], device=dev)[:, None] + arange]
            if lead:
                rows = torch.cat([torch.full((len(batch), 1), self.bos_id, dtype=rows.dtype, device=dev), rows], 1)
            pos = torch.cat(pos_parts).to(dev)
            out[pos] = self._forward_nll(rows, torch.cat(flat_parts).to(dev), ids_dev[pos])
        return out.cpu().tolist()  # the one sync: batches above queue up without waiting

    def _nll_lanes(self, ids, windows: Sequence[Window], needed) -> list[float]:
        """The fused decoder over lanes of windows (engine fused: every window is its own lane).

        Lanes run in lock-step, a batch per step: step 0 feeds each lane's first window whole;
        step k feeds each lane's k-th window's new tokens, which attend to the cached
        keys/values of the `context` tokens before them. Positions count from the lane's
        start. Token p's surprisal comes from the hidden state of token p - 1, which may sit
        in the previous step."""
        torch = _import_torch()[0]
        dev = self.device
        n = len(ids)
        length = windows[0].end - windows[0].start
        context = max(self.overlap, 1)
        groups = _lane_groups(self.lane_pieces(windows), self.lanes_cap(length),
                              max(1, self.batch_tokens // length))
        steps, index = _plan_lane_steps(ids, groups, needed, length, context)
        # every index in one copy: a copy to the GPU per step would wait for the queued work
        index = torch.from_numpy(index).to(dev)
        ids_dev = index[:n]
        out = torch.full((n,), math.nan, dtype=torch.float32, device=dev)
        cache = None
        with torch.inference_mode():
            for first, lanes, t, keep, at, m in steps:
                if first:
                    cache = None
                elif cache is not None:
                    cache = [(ck[:lanes], cv[:lanes]) for ck, cv in cache]
                rows = ids_dev[index[at:at + lanes * t]].view(lanes, t)
                pos = index[at + lanes * t:at + 2 * lanes * t].view(lanes, t)
                hidden, cache = self.decoder.run(rows, pos, cache, keep)
                if m:
                    at += 2 * lanes * t
                    tgt, flat = index[at:at + m], index[at + m:at + 2 * m]
                    out[tgt] = self._head_nll(self.decoder.norm(hidden.index_select(0, flat)), ids_dev[tgt])
                del hidden
        return out.cpu().tolist()

    def lanes_cap(self, length: int) -> int:
        """Most lanes with a cache that run at once."""
        lanes = self.lanes or LANES
        return max(1, min(lanes, self.batch_tokens // length))

    def _nll_sequences(self, seqs, measure_from) -> list[float]:
        """Mean surprisal of each sequence from its `measure_from` position, batched by length. The
        batch's index arrays are built in numpy (a per-token Python loop was most of the time on a GPU)."""
        import numpy as np

        torch = _import_torch()[0]
        if self.bos_id is not None:
            seqs = [[self.bos_id, *s] for s in seqs]
            measure_from = [m + 1 for m in measure_from]
        lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        starts = np.asarray(measure_from, dtype=np.int64).reshape(-1)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        means: list[float] = [0.0] * len(seqs)
        i = 0
        while i < len(order):
            j = i + 1  # sorted by length: the last one added sets the batch width
            while j < len(order) and (j - i + 1) * len(seqs[order[j]]) <= self.batch_tokens:
                j += 1
            batch = order[i:j]
            width = int(lens[batch[-1]])
            rows = np.zeros((len(batch), width), dtype=np.int64)
            for b, k in enumerate(batch):
                rows[b, :lens[k]] = seqs[k]
            positions = np.arange(width)[None, :]
            mask = positions < lens[batch][:, None]
            row_of, pos = np.nonzero((positions >= starts[batch][:, None]) & mask)
            nll = self._forward_nll(torch.from_numpy(rows), torch.from_numpy(row_of * width + pos - 1),
                                    torch.from_numpy(rows[row_of, pos]),
                                    torch.from_numpy(mask.astype(np.int64))).cpu().double().numpy()
            sums = np.bincount(row_of, weights=nll, minlength=len(batch))
            counts = np.bincount(row_of, minlength=len(batch))
            for b, k in enumerate(batch):
                means[k] = float(sums[b] / counts[b]) if counts[b] else 0.0
            i = j
        return means

    def _forward_nll(self, rows, flat, targets, mask=None):
        """Run the base model on `rows`; surprisal of `targets` at hidden rows `flat` (float32)."""
        torch = _import_torch()[0]
        with torch.inference_mode():
            kwargs = {"input_ids": rows.to(self.device), "use_cache": False}
            if mask is not None:
                kwargs["attention_mask"] = mask.to(self.device)
            hidden = self._base(**kwargs).last_hidden_state
            hidden = hidden.reshape(-1, hidden.shape[-1]).index_select(0, flat.to(self.device))
            return self._head_nll(hidden, targets.to(self.device))

    def _head_nll(self, hidden, targets):
        """Output layer in row chunks; only the target's log-prob survives each chunk."""
        torch = _import_torch()[0]
        out = torch.empty(hidden.shape[0], dtype=torch.float32, device=hidden.device)
        weight, bias = self._head.weight, self._head.bias
        for s in range(0, hidden.shape[0], self._chunk_rows):
            logits = torch.nn.functional.linear(hidden[s:s + self._chunk_rows], weight, bias)
            out[s:s + self._chunk_rows] = self._lse(logits, targets[s:s + self._chunk_rows])
        return out


def _compile_mode(value: Any) -> bool | str:
    """compile option: True, False or "auto" (strings from a CLI or config accepted)."""
    if isinstance(value, bool) or value == "auto":
        return value
    text = str(value).strip().lower()
    if text in ("auto", ""):
        return "auto"
    if text in ("1", "true", "yes", "on", "layers"):
        return True
    if text in ("0", "false", "no", "off", "none"):
        return False
    raise ModelError(f"scorer compile must be auto, true or false; got {value!r}")


def _lanes_option(value: Any) -> int | None:
    """lanes option: None/"auto" = default, else a positive integer."""
    if value is None or str(value).strip().lower() in ("", "auto"):
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        v = int(value)
        if v < 1:
            raise ValueError
    except (TypeError, ValueError):
        raise ModelError(f"scorer lanes must be auto or a positive integer; got {value!r}") from None
    return v


def _plan_lane_steps(ids, groups, needed, length: int, context: int):
    """Plan every lane step on the host: (steps, index). `index` is one int64 array: the ids,
    then per step its rows' token positions, their positions in the lane, and the targets
    with the hidden rows that predict them; step = (first, lanes, t, keep, at, targets)."""
    import numpy as np

    starts = [a for a, _ in needed]
    n = len(ids)
    parts = [_id_array(ids)]
    steps = []
    at = n
    for group in groups:
        lane_starts = np.array([p[0].start for p in group], dtype=np.int64)
        for k in range(len(group[0])):
            active = [p for p in group if len(p) > k]  # longest first: always a prefix
            t = length if k == 0 else length - context
            row_starts = np.array([p[0].start if k == 0 else p[k - 1].end for p in active], dtype=np.int64)
            ar = np.arange(t, dtype=np.int64)
            parts.append((row_starts[:, None] + ar).ravel())
            parts.append(((row_starts - lane_starts[:len(active)])[:, None] + ar).ravel())
            tgt, flat = [], []
            for b, (p, a) in enumerate(zip(active, row_starts.tolist())):
                lo, hi = max(a + 1, p[0].score_from), min(a + t + 1, p[-1].end)
                for x, y in needed_ranges(needed, starts, lo, hi):
                    tgt.append(np.arange(x, y, dtype=np.int64))
                    flat.append(tgt[-1] + (b * t - a - 1))
            m = sum(len(r) for r in tgt)
            parts += tgt + flat
            keep = context if len(active[0]) > k + 1 else 0
            steps.append((k == 0, len(active), t, keep, at, m))
            at += 2 * len(active) * t + 2 * m
    return steps, np.concatenate(parts)


def _id_array(ids):
    """Token ids as an int64 numpy array (np.fromiter: several times faster than torch on a list)."""
    import numpy as np

    return np.fromiter(ids, dtype=np.int64, count=len(ids))


def _lane_groups(pieces, cap: int, per_batch: int):
    """Pieces run together: longest first; at most `cap` pieces that need a cache (more than
    one window) and at most `per_batch` in all (their first windows form one batch)."""
    order = sorted(pieces, key=len, reverse=True)
    group: list = []
    multi = 0
    for p in order:
        if group and (len(group) >= per_batch or (len(p) > 1 and multi >= cap)):
            yield group
            group, multi = [], 0
        group.append(p)
        multi += len(p) > 1
    if group:
        yield group


def _triton_lse(torch, device):
    """The one-pass Triton logsumexp kernel, if Triton is there and it agrees with torch on a
    small check; else None."""
    try:
        from catp.scoring._lse_triton import lse_minus_target

        gen = torch.Generator(device=device).manual_seed(0)
        logits = (torch.randn(7, 5003, generator=gen, device=device) * 4).to(torch.bfloat16)
        targets = torch.randint(0, 5003, (7,), generator=gen, device=device)
        got = lse_minus_target(logits, targets)
        want = _lse_minus_target(logits, targets)
        if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
            return None
        return lse_minus_target
    except Exception:
        return None
