"""Pydantic shapes of what the backends return (only the fields catp reads)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Loose(BaseModel):
    """Servers add fields freely; keep them but do not require them."""

    model_config = ConfigDict(extra="allow")


class ModelCard(_Loose):
    id: str
    root: str | None = None
    max_model_len: int | None = None


class ModelList(_Loose):
    data: list[ModelCard]


class TokenizeReply(_Loose):
    count: int
    max_model_len: int | None = None
    tokens: list[int] = Field(default_factory=list)


class Usage(_Loose):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatMessage(_Loose):
    role: str = "assistant"
    content: str | None = None


class ChatChoice(_Loose):
    index: int = 0
    message: ChatMessage
    finish_reason: str | None = None


class ChatReply(_Loose):
    model: str | None = None
    choices: list[ChatChoice] = Field(min_length=1)
    usage: Usage | None = None
    prompt_token_ids: list[int] | None = None


class CompletionChoice(_Loose):
    index: int = 0
    text: str = ""
    finish_reason: str | None = None
    prompt_logprobs: list[Any] | None = None


class CompletionReply(_Loose):
    model: str | None = None
    choices: list[CompletionChoice] = Field(min_length=1)
    usage: Usage | None = None


class Delta(_Loose):
    content: str | None = None


class StreamChoice(_Loose):
    index: int = 0
    delta: Delta | None = None  # chat
    text: str | None = None  # completions
    finish_reason: str | None = None


class StreamChunk(_Loose):
    model: str | None = None
    choices: list[StreamChoice] = Field(default_factory=list)
    usage: Usage | None = None


class Generation(BaseModel):
    """One finished answer, from any backend (HTTP server or in-process engine)."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = None
    streamed: bool = False
    prompt_token_ids: list[int] | None = None
    warnings: list[str] = Field(default_factory=list)


class KvCache(BaseModel):
    """KV-cache capacity, shared by all running requests: num_blocks x block_size tokens
    (or the engine's own group-aware figure when it reports a smaller one)."""

    num_blocks: int
    block_size: int
    reported_tokens: int | None = None  # vLLM's kv_cache_size_tokens, when given
    source: str

    @property
    def usable_blocks(self) -> int:
        if self.reported_tokens is None:
            return self.num_blocks
        return min(self.num_blocks, self.reported_tokens // self.block_size)

    @property
    def tokens(self) -> int:
        return self.usable_blocks * self.block_size

    def per_request_tokens(self, concurrency: int) -> int:
        """Tokens (prompt + answer) each of `concurrency` equal requests can hold before the
        scheduler must preempt one: whole blocks only, since blocks are not split."""
        return (self.usable_blocks // max(1, concurrency)) * self.block_size
