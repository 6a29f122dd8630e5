"""The LM scorer's own decoder for Llama-style causal LMs (Qwen2, Llama): fast path on a GPU.

It computes what transformers' forward of these models computes (same weights, same
RMSNorm, RoPE from the model's own rotary module, softmax attention), with changes that do
not change the function:

* **fused projections**: q/k/v run as one GEMM and gate/up as one. The fused weights are
  built once, by concatenation; the HF modules' weights become views into them, so memory
  is not doubled and the model's own forward still works and gives the same numbers;
* **attention with a key/value cache**: a chunk of new tokens attends to itself (causally)
  and to cached keys/values of the tokens before it (`lanes`, in `catp.scoring.lm`). On CUDA
  this is FlashAttention with its bottom-right causal alignment; elsewhere SDPA with an
  explicit mask;
* only the rows whose score is needed go through the final norm (the caller selects them).

Optionally the per-layer pieces around attention are compiled (`torch.compile`, one graph
for all layers, dynamic shapes). Models this module does not recognise run through
transformers as before (`unsupported_reason`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SUPPORTED = ("Qwen2ForCausalLM", "LlamaForCausalLM")


def unsupported_reason(model: Any) -> str | None:
    """None when `FusedDecoder` can run `model`; else a short reason (the HF forward is used)."""
    name = type(model).__name__
    if name not in SUPPORTED:
        return f"{name} is not one of {', '.join(SUPPORTED)}"
    cfg = model.config
    if getattr(cfg, "hidden_act", "silu") != "silu":
        return f"activation {cfg.hidden_act}"
    if any(t != "full_attention" for t in (getattr(cfg, "layer_types", None) or [])):
        return "sliding-window attention"
    base = model.base_model
    rope = getattr(getattr(base, "rotary_emb", None), "rope_type", None)
    if rope is None or rope in ("dynamic", "longrope"):  # these depend on the sequence length
        return f"rope type {rope}"
    for layer in base.layers:
        a, m = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
        if a is None or m is None or not all(hasattr(a, p) for p in ("q_proj", "k_proj", "v_proj", "o_proj")):
            return "unexpected attention module"
        if not all(hasattr(m, p) for p in ("gate_proj", "up_proj", "down_proj")):
            return "unexpected MLP module"
        if getattr(a, "sliding_window", None):
            return "sliding-window attention"
    return None


@dataclass
class _Layer:
    ln1: Any
    ln2: Any
    eps1: float
    eps2: float
    w_qkv: Any
    b_qkv: Any
    w_o: Any
    b_o: Any
    w_gu: Any
    w_down: Any
    b_down: Any
    b_gu: Any


def _fuse(torch, mods):
    """Concatenate the Linear modules' weights (and biases) along the output dimension; the
    modules' own parameters become views into the result."""
    weight = torch.cat([m.weight.detach() for m in mods])
    biases = [m.bias for m in mods]
    bias = None
    if any(b is not None for b in biases):
        bias = torch.cat([b.detach() if b is not None else weight.new_zeros(m.weight.shape[0])
                          for m, b in zip(mods, biases)])
    row = 0
    for m in mods:
        n = m.weight.shape[0]
        m.weight = torch.nn.Parameter(weight[row:row + n], requires_grad=False)
        if m.bias is not None:
            m.bias = torch.nn.Parameter(bias[row:row + n], requires_grad=False)
        row += n
    return weight, bias


def _rms(torch, x, weight, eps):
    """transformers' RMSNorm (Qwen2RMSNorm, LlamaRMSNorm): float32 statistics, then weight * x."""
    dtype = x.dtype
    x32 = x.to(torch.float32)
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(dtype)


def _rotate(torch, x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _pre_attention(h, ln_w, eps: float, w_qkv, b_qkv, cos, sin, heads: int, kv_heads: int, head_dim: int):
    """RMSNorm, fused q/k/v, RoPE, on rows: h (N, hidden), cos/sin (N, head_dim).

    Returns q (N, heads, head_dim), k and v (N, kv_heads, head_dim), contiguous. Only N
    varies between calls, so a compiled graph needs one dynamic dimension."""
    import torch

    x = _rms(torch, h, ln_w, eps)
    qkv = torch.nn.functional.linear(x, w_qkv, b_qkv).view(-1, heads + 2 * kv_heads, head_dim)
    q, k, v = qkv.split([heads, kv_heads, kv_heads], dim=1)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    q = (q * c) + (_rotate(torch, q) * s)
    k = (k * c) + (_rotate(torch, k) * s)
    return q, k, v.contiguous()


def _post_pre(h, attn, w_o, b_o, ln2, eps2: float, w_gu, b_gu, w_down, b_down, inter: int,
              ln1, eps1: float, w_qkv, b_qkv, cos, sin, heads: int, kv_heads: int, head_dim: int):
    """One layer's end and the next layer's start in one graph (fewer calls per layer)."""
    h = _post_attention(h, attn, w_o, b_o, ln2, eps2, w_gu, b_gu, w_down, b_down, inter)
    return (h, *_pre_attention(h, ln1, eps1, w_qkv, b_qkv, cos, sin, heads, kv_heads, head_dim))


def _merged_post(h, o1, lse1, o2, lse2, *rest):
    """`_post_attention` after merging split attention (see `_merge_attention`)."""
    attn = _merge_attention(o1, lse1, o2, lse2)
    return _post_attention(h, attn.reshape(h.shape[0], -1), *rest)


def _merged_post_pre(h, o1, lse1, o2, lse2, *rest):
    """`_post_pre` after merging split attention."""
    attn = _merge_attention(o1, lse1, o2, lse2)
    return _post_pre(h, attn.reshape(h.shape[0], -1), *rest)


def _merge_attention(o1, lse1, o2, lse2):
    """Combine attention over two disjoint key sets from their outputs and log-sum-exps.

    o: (B, T, H, D), lse: (B, T, H) float32. Exact up to rounding: softmax over the union
    is the lse-weighted mix of the two partial softmaxes."""
    import torch

    m = torch.maximum(lse1, lse2)
    w1 = torch.exp(lse1 - m).unsqueeze(-1)
    w2 = torch.exp(lse2 - m).unsqueeze(-1)
    return ((o1.float() * w1 + o2.float() * w2) / (w1 + w2)).to(o1.dtype)


def _attention_math(q, k, v, causal: bool, scale: float):
    """Reference attention with its log-sum-exp (any device, float32 inside); q/k/v (B, H, T|S, D).

    Used where no fused kernel returns the log-sum-exp (the CPU), so that the split path
    (cache part + own part, merged) is the same code everywhere."""
    import torch

    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    if causal:
        t, s = scores.shape[-2:]
        mask = torch.ones(t, s, dtype=torch.bool, device=q.device).tril(s - t)
        scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.matmul(torch.softmax(scores, dim=-1), v.float()).to(q.dtype)
    return out, lse


def _post_attention(h, attn, w_o, b_o, ln_w, eps: float, w_gu, b_gu, w_down, b_down, inter: int):
    """o_proj and residual; RMSNorm, fused gate/up, SiLU(gate) * up, down_proj and residual."""
    import torch

    F = torch.nn.functional
    h = h + F.linear(attn, w_o, b_o)
    x = _rms(torch, h, ln_w, eps)
    gate, up = F.linear(x, w_gu, b_gu).split([inter, inter], dim=-1)
    return h + F.linear(F.silu(gate) * up, w_down, b_down)


class FusedDecoder:
    """Runs the decoder stack of a supported model (see `unsupported_reason`)."""

    def __init__(self, model: Any, *, compile: bool = False) -> None:
        import torch

        self.torch = torch
        base = model.base_model
        cfg = model.config
        self.embed = base.embed_tokens
        self.final_norm = base.norm
        self.rotary = base.rotary_emb
        a0 = base.layers[0].self_attn
        self.heads = cfg.num_attention_heads
        self.kv_heads = getattr(cfg, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(a0, "head_dim", None) or cfg.hidden_size // self.heads
        self.scaling = float(getattr(a0, "scaling", self.head_dim ** -0.5))
        self.inter = base.layers[0].mlp.gate_proj.weight.shape[0]
        self.layers: list[_Layer] = []
        with torch.no_grad():
            for layer in base.layers:
                a, m = layer.self_attn, layer.mlp
                w_qkv, b_qkv = _fuse(torch, [a.q_proj, a.k_proj, a.v_proj])
                w_gu, b_gu = _fuse(torch, [m.gate_proj, m.up_proj])
                self.layers.append(_Layer(
                    ln1=layer.input_layernorm.weight, eps1=float(layer.input_layernorm.variance_epsilon),
                    ln2=layer.post_attention_layernorm.weight,
                    eps2=float(layer.post_attention_layernorm.variance_epsilon),
                    w_qkv=w_qkv, b_qkv=b_qkv, w_o=a.o_proj.weight, b_o=a.o_proj.bias,
                    w_gu=w_gu, b_gu=b_gu, w_down=m.down_proj.weight, b_down=m.down_proj.bias))
        w = self.layers[0].w_qkv
        on_cuda = w.device.type == "cuda" and w.dtype in (torch.float16, torch.bfloat16)
        fits = self.head_dim % 8 == 0 and self.head_dim <= 128
        # square: the kernel for a window or lane start (causal, no cache);
        # cached: how new tokens attend to their cache and to themselves
        #   "flash": concatenate cache and new keys, FlashAttention (bottom-right causal)
        #   "split-cudnn" / "split-flash" / "split-math": attend to the cache (no mask) and to
        #   the new keys (causal, square) apart, then merge by log-sum-exp
        #   "sdpa": concatenate, SDPA with an explicit bottom-right mask (any device)
        self.square = "cudnn" if on_cuda and fits else "sdpa"
        self.cached = "split-cudnn" if on_cuda and fits else "sdpa"
        self._eager()
        if compile:
            self.compile()

    _FUNCS = {"_pre": _pre_attention, "_post": _post_attention, "_post_pre": _post_pre,
              "_merged_post": _merged_post, "_merged_post_pre": _merged_post_pre}

    def _eager(self) -> None:
        for name, fn in self._FUNCS.items():
            setattr(self, name, fn)
        self.compiled = False

    def compile(self, dynamic: bool | None = None, mode: str | None = None) -> None:
        """torch.compile the pieces around attention (one graph serves every layer; only the
        number of rows varies, which becomes dynamic after the first change)."""
        torch = self.torch
        try:
            for name, fn in self._FUNCS.items():
                setattr(self, name, torch.compile(fn, dynamic=dynamic, mode=mode))
            self.compiled = True
        except Exception:  # no compiler: eager gives the same numbers
            self._eager()

    def _kernel(self, kind: str, q, k, v, causal: bool, lse: bool):
        """One attention call on (B, H, T, D) views; (out (B, H, T, D), lse (B, H, T) or None)."""
        torch = self.torch
        if kind == "cudnn":
            r = torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, lse, 0.0, causal, False,
                                                                   scale=self.scaling)
        elif kind == "flash":
            r = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=self.scaling)
        elif kind == "math":
            return _attention_math(q, k, v, causal, self.scaling)
        else:
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=self.scaling)
            return out, None
        b, h, t = q.shape[:3]
        return r[0], (r[1].reshape(b, h, t) if lse else None)

    def _expand(self, x):
        """Repeat key/value heads for grouped-query attention: (B, S, KV, D) -> (B, S, H, D)."""
        if self.kv_heads == self.heads:
            return x
        b, s, kv, d = x.shape
        rep = self.heads // kv
        return x[:, :, :, None, :].expand(b, s, kv, rep, d).reshape(b, s, kv * rep, d)

    def _attend(self, q, k, v, ck=None, cv=None):
        """Causal attention of q (B, T, H, D) over cached keys ck/cv (B, L, KV, D), all visible,
        and its own keys k/v (B, T, KV, D), causally. Returns (B * T, H * D), or with a
        split path the two partial results and their log-sum-exps (o1, lse1, o2, lse2)."""
        torch = self.torch
        b, t, h, d = q.shape
        k, v = self._expand(k), self._expand(v)
        qh = q.transpose(1, 2)
        if ck is None:
            out, _ = self._kernel(self.square, qh, k.transpose(1, 2), v.transpose(1, 2), True, False)
            return out.transpose(1, 2).reshape(b * t, h * d)
        ck, cv = self._expand(ck), self._expand(cv)
        if self.cached.startswith("split-"):  # merged by the caller's compiled graph
            kind = self.cached[len("split-"):]
            o1, l1 = self._kernel(kind, qh, ck.transpose(1, 2), cv.transpose(1, 2), False, True)
            o2, l2 = self._kernel(kind, qh, k.transpose(1, 2), v.transpose(1, 2), True, True)
            return o1.transpose(1, 2), l1.transpose(1, 2), o2.transpose(1, 2), l2.transpose(1, 2)
        ka = torch.cat([ck, k], dim=1).transpose(1, 2)
        va = torch.cat([cv, v], dim=1).transpose(1, 2)
        if self.cached == "flash":  # FlashAttention's causal flag is bottom-right aligned
            out = torch.ops.aten._scaled_dot_product_flash_attention(qh, ka, va, 0.0, True, False,
                                                                     scale=self.scaling)[0]
        else:
            s = ka.shape[2]
            mask = torch.ones(t, s, dtype=torch.bool, device=q.device).tril(s - t)
            out = torch.nn.functional.scaled_dot_product_attention(qh, ka, va, attn_mask=mask, scale=self.scaling)
        return out.transpose(1, 2).reshape(b * t, h * d)

    def run(self, ids, positions, cache=None, keep: int = 0):
        """Hidden states (before the final norm) of `ids` (B, T) at `positions` (B, T).

        `cache`: per layer (k, v) of shape (B, L, KV, D), keys/values of the L tokens just
        before these (already rotated at their own positions), or None. Returns the hidden
        states (B * T, hidden) and, if `keep`, the next cache: the last `keep` tokens' k/v."""
        torch = self.torch
        b, t = ids.shape
        h = self.embed(ids).reshape(b * t, -1)
        cos, sin = self.rotary(h[None], positions.reshape(1, -1))
        cos, sin = cos[0], sin[0]
        new_cache = []
        dims = (self.heads, self.kv_heads, self.head_dim)
        lw = self.layers[0]
        q, k, v = self._pre(h, lw.ln1, lw.eps1, lw.w_qkv, lw.b_qkv, cos, sin, *dims)
        for i, lw in enumerate(self.layers):
            ck, cv = cache[i] if cache is not None else (None, None)
            q = q.view(b, t, self.heads, self.head_dim)
            k = k.view(b, t, self.kv_heads, self.head_dim)
            v = v.view(b, t, self.kv_heads, self.head_dim)
            attn = self._attend(q, k, v, ck, cv)
            if keep:
                if keep == t:  # the new keys/values are the next cache
                    new_cache.append((k, v))
                elif keep < t:
                    new_cache.append((k[:, t - keep:].contiguous(), v[:, t - keep:].contiguous()))
                else:  # chunks shorter than the cache: keep part of the old cache too
                    new_cache.append((torch.cat([ck, k], 1)[:, -keep:].contiguous(),
                                      torch.cat([cv, v], 1)[:, -keep:].contiguous()))
            del q, k, v
            post = (lw.w_o, lw.b_o, lw.ln2, lw.eps2, lw.w_gu, lw.b_gu, lw.w_down, lw.b_down, self.inter)
            split = isinstance(attn, tuple)
            if i + 1 < len(self.layers):
                nxt = self.layers[i + 1]
                pre = (nxt.ln1, nxt.eps1, nxt.w_qkv, nxt.b_qkv, cos, sin, *dims)
                fn = self._merged_post_pre if split else self._post_pre
                h, q, k, v = fn(h, *attn, *post, *pre) if split else fn(h, attn, *post, *pre)
            else:
                h = self._merged_post(h, *attn, *post) if split else self._post(h, attn, *post)
            del attn
        return h, (new_cache if keep else None)

    def norm(self, h):
        """The final norm (on the rows the caller selected)."""
        return self.final_norm(h)
