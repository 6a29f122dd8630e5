"""In-process engine: `vllm.LLM` behind the same interface as the server client.

For offline batch work on a machine with vLLM installed; no HTTP. vLLM is imported
only when an engine is built, so catp itself never needs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from catp.backends.client import ContextLengthError
from catp.backends.messages import normalize_messages
from catp.backends.schemas import Generation, KvCache
from catp.errors import BackendError

_TOO_LONG = re.compile(r"longer than the maximum model length|maximum context length|max_model_len", re.I)


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except Exception:  # vllm raises more than ImportError when its torch stack is broken
        return False
    return True


class LocalEngine:
    """`vllm.LLM(model, ...)` with `chat`, `count_chat_tokens`, `kv_cache`, as `VLLMClient` has.

    Extra keyword arguments go to `vllm.LLM` (e.g. enforce_eager=True, dtype="float32").
    """

    def __init__(self, model: str, *, max_model_len: int | None = None, seed: int = 0, **llm_kwargs: Any) -> None:
        try:
            from vllm import LLM
        except Exception as exc:
            raise BackendError(f"in-process engine: cannot import vllm in this Python ({type(exc).__name__}: {exc}); "
                               "install vllm or use a server (--server)") from exc
        self._model = model
        self.name = f"in-process vllm.LLM({model})"
        self.tokenize_source = f"{self.name} tokenizer (chat template)"
        self.max_model_len_source = f"{self.name} model_config.max_model_len"
        try:
            self._llm = LLM(model=model, max_model_len=max_model_len, seed=seed, **llm_kwargs)
        except Exception as exc:
            raise BackendError(f"{self.name}: failed to start ({type(exc).__name__}: {exc})") from exc
        self._tokenizer = self._llm.get_tokenizer()

    @property
    def model(self) -> str:
        return self._model

    def max_model_len(self) -> int | None:
        return int(self._llm.llm_engine.model_config.max_model_len)

    def tokenizer_path(self) -> str | None:
        return self._model if Path(self._model, "tokenizer.json").is_file() else None

    def count_chat_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        return len(self._prompt_ids(normalize_messages(messages)[0]))

    def kv_cache(self) -> KvCache | None:
        cache = self._llm.llm_engine.vllm_config.cache_config
        if not cache.num_gpu_blocks or not cache.block_size:
            return None
        reported = getattr(cache, "kv_cache_size_tokens", None)
        return KvCache(num_blocks=int(cache.num_gpu_blocks), block_size=int(cache.block_size),
                       reported_tokens=int(reported) if reported else None,
                       source=f"{self.name}: cache_config (num_gpu_blocks x block_size)")

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        on_delta: Callable[[str], None] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Generation:
        """One answer. The offline engine does not stream: `on_delta` gets the whole text once."""
        msgs, warnings = normalize_messages(messages)
        [gen] = self.chat_batch([msgs], max_tokens=max_tokens, temperature=temperature, extra=extra)
        gen.warnings = warnings
        if on_delta is not None and gen.text:
            on_delta(gen.text)
        return gen

    def chat_batch(self, conversations: Sequence[Sequence[Mapping[str, str]]], *, max_tokens: int,
                   temperature: float = 0.0, extra: Mapping[str, Any] | None = None) -> list[Generation]:
        """Answer many conversations in one engine call (vLLM batches them)."""
        from vllm import SamplingParams

        convs = [normalize_messages(c)[0] for c in conversations]
        params = SamplingParams(max_tokens=max_tokens, temperature=temperature, **(extra or {}))
        limit = self.max_model_len()
        for conv in convs:  # the engine's own check raises deep inside; say it plainly first
            n = len(self._prompt_ids(conv))
            if limit is not None and n > limit:
                raise ContextLengthError(f"{self.name}: the prompt has {n} tokens; the maximum context length "
                                         f"is {limit}", limit=limit, prompt_tokens=n)
        try:
            outputs = self._llm.chat(convs, params, use_tqdm=False)
        except Exception as exc:
            if _TOO_LONG.search(str(exc)):
                raise ContextLengthError(f"{self.name}: {exc}", limit=limit) from exc
            raise BackendError(f"{self.name}: generation failed ({type(exc).__name__}: {exc})") from exc
        return [Generation(text=out.outputs[0].text, finish_reason=out.outputs[0].finish_reason,
                           prompt_tokens=len(out.prompt_token_ids or []),
                           completion_tokens=len(out.outputs[0].token_ids), model=self._model,
                           prompt_token_ids=list(out.prompt_token_ids or []))
                for out in outputs]

    def close(self) -> None:
        self._llm = None  # vLLM frees the engine when the LLM object is collected

    def _prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        text = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self._tokenizer.encode(text, add_special_tokens=False)
