"""One-pass `logsumexp(logits) - logits[target]` per row, as a Triton kernel (CUDA only).

The output layer's logits (bf16, one row per scored token, the whole vocabulary wide) are
read once: each program walks one row in blocks, keeping a running maximum and a running
sum of exp(x - max) in float32 (the online softmax normaliser). A compiled or eager
`torch.logsumexp` reads the row more than once and makes float32 temporaries.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _lse_minus_target_kernel(logits_ptr, row_stride, targets_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * row_stride
    offs = tl.arange(0, BLOCK)
    m = float("-inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    target = tl.load(targets_ptr + row)
    x_t = tl.load(base + target).to(tl.float32)
    tl.store(out_ptr + row, m + tl.log(d) - x_t)


def lse_minus_target(logits, targets, block: int = 8192, num_warps: int = 8):
    """-log p(target) per row of `logits` (rows, vocab; last dim contiguous), float32."""
    import torch

    rows, n_cols = logits.shape
    out = torch.empty(rows, dtype=torch.float32, device=logits.device)
    if rows:
        _lse_minus_target_kernel[(rows,)](logits, logits.stride(0), targets.contiguous(), out, n_cols,
                                          BLOCK=block, num_warps=num_warps)
    return out
