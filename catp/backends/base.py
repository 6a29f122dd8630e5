"""The one interface `ask` needs from a backend: a vLLM server or an in-process engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from catp.backends.schemas import Generation, KvCache


@runtime_checkable
class Backend(Protocol):
    name: str  # where answers come from, e.g. "vLLM server http://127.0.0.1:8000/v1"
    tokenize_source: str  # how count_chat_tokens counts, for reports
    max_model_len_source: str

    @property
    def model(self) -> str: ...

    def max_model_len(self) -> int | None: ...

    def tokenizer_path(self) -> str | None: ...

    def count_chat_tokens(self, messages: Sequence[Mapping[str, str]]) -> int: ...

    def kv_cache(self) -> KvCache | None: ...

    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        on_delta: Callable[[str], None] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Generation: ...

    def close(self) -> None: ...
