"""The token budget comes from the engine, and every figure says where it came from.

    prompt limit    = min(max_model_len, per-request KV share) - max_tokens
    document budget = prompt limit - prompt overhead (template + question, chat template included)

The per-request KV share is (num_gpu_blocks // concurrency) x block_size: with that many
requests running at once, a longer one makes the scheduler preempt (and later recompute)
a request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from catp.backends.base import Backend
from catp.backends.schemas import KvCache
from catp.errors import BackendError, BudgetError

log = logging.getLogger("catp.backends.budget")


class Figure(BaseModel):
    value: int
    source: str


class EngineBudget(BaseModel):
    backend: str
    model: str
    max_model_len: Figure
    max_tokens: Figure
    prompt_overhead: Figure
    kv_cache_tokens: Figure | None = None
    block_size: int | None = None
    num_blocks: int | None = None
    concurrency: int = 1
    per_request_kv_tokens: Figure | None = None
    prompt_limit: Figure
    document_budget: Figure
    counter: str  # how prompts are counted: the server's /tokenize, a local tokenizer, or an estimate
    warnings: list[str] = []


class ChatCounter:
    """Counts a chat prompt exactly: the backend's tokenizer (vLLM `/tokenize`) first, then the
    served model's tokenizer loaded locally, else an estimate that says it is one."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.source = backend.tokenize_source
        self._local = None
        self.exact = True
        self.notes: list[str] = []  # how and why counting fell back, for the result's warnings

    def count(self, messages: Sequence[Mapping[str, str]]) -> int:
        if self._local is None:
            try:
                return self.backend.count_chat_tokens(messages)
            except BackendError as exc:
                self._local = self._fallback(exc)
        return self._local(messages)

    def _fallback(self, exc: BackendError):
        path = self.backend.tokenizer_path()
        if path:
            try:
                from transformers import AutoTokenizer

                tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
                self.source = f"local tokenizer {path} (chat template)"
                self._note(f"{exc}; counting with {self.source}")

                def local(messages):
                    text = tok.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
                    return len(tok(text, add_special_tokens=False)["input_ids"])

                return local
            except Exception as err:  # transformers missing, or no chat template
                self._note(f"local tokenizer {path} unusable ({type(err).__name__}: {err})")
        from catp.tokens import load_token_counter

        counter = load_token_counter(None)
        self.exact = False
        self.source = f"estimate: {counter.name} + 8 tokens per message (the server has no /tokenize)"
        self._note(f"{exc}; counting with an {self.source}")
        return lambda messages: sum(counter.count(m["content"]) + 8 for m in messages)

    def _note(self, text: str) -> None:
        log.warning(text)
        self.notes.append(text)


def engine_budget(
    backend: Backend,
    counter: ChatCounter,
    skeleton: Sequence[Mapping[str, str]],
    *,
    max_tokens: int,
    concurrency: int = 1,
    max_model_len: int | None = None,
    use_metrics: bool = True,
) -> EngineBudget:
    """Budget for the document that goes into `skeleton` (the messages with an empty document)."""
    if max_tokens < 1:
        raise BudgetError(f"max_tokens must be at least 1, got {max_tokens}")
    if concurrency < 1:
        raise BudgetError(f"concurrency must be at least 1, got {concurrency}")
    warnings: list[str] = []
    if max_model_len is not None:
        ctx = Figure(value=max_model_len, source="given (--max-model-len)")
        try:
            served = backend.max_model_len()
        except BackendError:  # the override is for servers that do not say
            served = None
        if served is not None and served < max_model_len:  # the server would refuse (or cut) longer requests
            warnings.append(f"the given max_model_len {max_model_len} is over the engine's {served}; using {served}")
            ctx = Figure(value=served, source=backend.max_model_len_source)
    else:
        served = backend.max_model_len()
        if served is None:
            raise BackendError(f"{backend.name}: no max_model_len reported; give it with --max-model-len")
        ctx = Figure(value=served, source=backend.max_model_len_source)
    if max_tokens >= ctx.value:
        raise BudgetError(f"max_tokens={max_tokens} leaves no room for a prompt: max_model_len is {ctx.value}")

    kv: KvCache | None = None
    if use_metrics:
        try:
            kv = backend.kv_cache()
        except BackendError as exc:
            warnings.append(f"no KV-cache figure ({exc})")
        if kv is None and not warnings:
            warnings.append("the engine reports no KV-cache size (vllm:cache_config_info); concurrency ignored")

    limit_total, bound = ctx.value, "max_model_len"
    per_request = None
    if kv is not None:
        share = kv.per_request_tokens(concurrency)
        per_request = Figure(value=share, source=f"({kv.usable_blocks} blocks // concurrency {concurrency})"
                                                 f" x block_size {kv.block_size}, from {kv.source}")
        if share < limit_total:
            limit_total, bound = share, f"KV share (concurrency {concurrency})"
    prompt_limit = limit_total - max_tokens
    if prompt_limit < 1:
        raise BudgetError(f"max_tokens={max_tokens} does not fit the {bound} of {limit_total} tokens; "
                          "lower --max-tokens or --concurrency")
    overhead = counter.count(skeleton)
    doc = prompt_limit - overhead
    if doc < 1:
        raise BudgetError(f"the template and question already take {overhead} tokens of the "
                          f"{prompt_limit}-token prompt limit; shorten the question or lower --max-tokens")
    return EngineBudget(
        backend=backend.name,
        model=backend.model,
        max_model_len=ctx,
        max_tokens=Figure(value=max_tokens, source="--max-tokens"),
        prompt_overhead=Figure(value=overhead, source=f"{counter.source}, template + question, empty document"),
        kv_cache_tokens=Figure(value=kv.tokens, source=kv.source) if kv else None,
        block_size=kv.block_size if kv else None,
        num_blocks=kv.num_blocks if kv else None,
        concurrency=concurrency,
        per_request_kv_tokens=per_request,
        prompt_limit=Figure(value=prompt_limit, source=f"{bound} {limit_total} - max_tokens {max_tokens}"),
        document_budget=Figure(value=doc, source=f"prompt limit {prompt_limit} - overhead {overhead}"),
        counter=counter.source,
        warnings=[*warnings, *counter.notes],
    )
