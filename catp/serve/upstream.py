"""The upstream vLLM server, from the event loop: one httpx.AsyncClient with explicit timeouts, and the engine
facts that do not change per request (the model list, the KV-cache size), cached with a refresh."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from catp.backends.client import parse_cache_config, split_server_url
from catp.backends.schemas import KvCache, ModelCard, ModelList
from catp.serve import jsonio
from catp.serve.errors import ApiError

# Response headers not passed on: they describe the hop, not the reply.
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "server",
               "date", "te", "trailer", "upgrade", "proxy-authenticate", "proxy-authorization"}


KEEPALIVE_S = 4.0
# errors of a kept-alive connection the upstream closed under the request: sent once more on a fresh one
_STALE_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class EngineFacts:
    def __init__(self, cards: list[ModelCard], kv: KvCache | None, fetched: float) -> None:
        self.cards, self.kv, self.fetched = cards, kv, fetched

    def card(self, model: str | None) -> ModelCard | None:
        match = [c for c in self.cards if c.id == model]
        return match[0] if match else (self.cards[0] if self.cards else None)

    def prompt_limit(self, model: str | None, max_tokens: int, concurrency: int) -> int | None:
        """min(max_model_len, KV share at `concurrency`) - max_tokens, as catp.backends.budget computes it."""
        card = self.card(model)
        if card is None or card.max_model_len is None:
            return None
        total = card.max_model_len
        if self.kv is not None:
            total = min(total, self.kv.per_request_tokens(concurrency))
        return total - max_tokens


class Upstream:
    def __init__(self, url: str, *, api_key: str | None, connect_timeout: float, read_timeout: float,
                 max_connections: int, facts_ttl: float = 60.0) -> None:
        self.root, self.base = split_server_url(url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout,
                                pool=connect_timeout)
        # idle connections are dropped before the upstream's own keep-alive timeout (uvicorn's and vLLM's: 5 s),
        # so a request is not sent on a connection the upstream is closing
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections,
                              keepalive_expiry=KEEPALIVE_S)
        self.http = httpx.AsyncClient(timeout=timeout, limits=limits, headers=headers, trust_env=False)
        self.connect_timeout = connect_timeout
        self.facts_ttl = facts_ttl
        self._facts: EngineFacts | None = None
        self._lock = asyncio.Lock()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def send(self, method: str, path: str, *, content: bytes | None = None,
                   stream: bool = False) -> httpx.Response:
        """Send to the upstream; a connection failure or timeout is a 502/504 ApiError."""
        url = self.root + path
        headers = {"content-type": "application/json", "accept-encoding": "identity"} if content is not None \
            else {"accept-encoding": "identity"}
        request = self.http.build_request(method, url, content=content, headers=headers)
        try:
            try:
                return await self.http.send(request, stream=stream)
            except _STALE_CONNECTION:  # before any reply: once more, on a new connection
                return await self.http.send(request, stream=stream)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise ApiError(502, f"the upstream {self.root} cannot be reached ({type(exc).__name__})",
                           code="upstream_unreachable") from None
        except httpx.TimeoutException as exc:
            raise ApiError(504, f"the upstream {self.root} did not answer in time ({type(exc).__name__})",
                           code="upstream_timeout") from None
        except httpx.HTTPError as exc:
            raise ApiError(502, f"the upstream {self.root} failed ({type(exc).__name__})",
                           code="upstream_error") from None

    async def facts(self) -> EngineFacts:
        facts = self._facts
        if facts is not None and time.monotonic() - facts.fetched < self.facts_ttl:
            return facts
        async with self._lock:
            if self._facts is not None and time.monotonic() - self._facts.fetched < self.facts_ttl:
                return self._facts
            resp = await self.send("GET", "/v1/models")
            try:
                await resp.aread()
                cards = ModelList.model_validate(resp.json()).data if resp.status_code == 200 else []
            except ValueError:
                cards = []
            kv = None
            try:
                metrics = await self.send("GET", "/metrics")
                await metrics.aread()
                if metrics.status_code == 200:
                    kv = parse_cache_config(metrics.text, source=f"GET {self.root}/metrics vllm:cache_config_info")
            except ApiError:
                pass
            self._facts = EngineFacts(cards, kv, time.monotonic())
            return self._facts

    async def count(self, body: dict[str, Any]) -> int | None:
        """Prompt tokens with the server's own /tokenize (chat template included); None if it cannot say."""
        resp = await self.send("POST", "/tokenize", content=jsonio.dumps(body))
        await resp.aread()
        if resp.status_code != 200:
            return None
        try:
            return int(resp.json()["count"])
        except (ValueError, KeyError, TypeError):
            return None


def passed_headers(resp: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in resp.headers.items() if k.lower() not in HOP_HEADERS}
