"""The gateway's routes and the request flow.

POST /v1/chat/completions, /v1/completions: parse -> count with /tokenize -> forward as received if it fits,
else prune in the worker pool -> forward -> on a 400-for-length, prune once more to a smaller budget.
GET /v1/models (proxied), /health (never waits on pruning), /metrics (Prometheus).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from catp.backends.client import ContextLengthError, http_error
from catp.config import DEFAULTS
from catp.serve import jsonio
from catp.serve.errors import ApiError, error_body, error_response
from catp.serve.metrics import Metrics
from catp.serve.requests import Parsed, parse
from catp.serve.upstream import Upstream, passed_headers
from catp.serve.workers import PrunePool

log = logging.getLogger("catp.serve")

DEFAULT_MAX_BODY = 64 * 1024 * 1024


@dataclass
class ServeSettings:
    upstream: str
    domain: str | None = None  # None: detected (catp serve's --domain auto)
    rules: list[str] = field(default_factory=lambda: list(DEFAULTS.rules))
    tokenizer: str | None = DEFAULTS.tokenizer
    concurrency: int = DEFAULTS.concurrency
    max_tokens: int = DEFAULTS.max_tokens
    workers: int = 2
    queue: int = 256
    max_body: int = DEFAULT_MAX_BODY
    api_key: str | None = None  # the key clients must send (from --api-key-env)
    upstream_api_key: str | None = None
    connect_timeout: float = 5.0
    read_timeout: float = 600.0
    max_connections: int = 256

    def worker_settings(self) -> dict[str, Any]:
        return {"upstream": self.upstream, "domain": self.domain, "rules": list(self.rules),
                "tokenizer": self.tokenizer, "api_key": self.upstream_api_key,
                "connect_timeout": self.connect_timeout, "read_timeout": self.read_timeout}


class Gateway:
    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.upstream: Upstream | None = None
        self.pool: PrunePool | None = None

    # -- lifecycle -------------------------------------------------------
    async def start(self) -> None:
        s = self.settings
        self.upstream = Upstream(s.upstream, api_key=s.upstream_api_key, connect_timeout=s.connect_timeout,
                                 read_timeout=s.read_timeout, max_connections=s.max_connections)
        self.pool = PrunePool(s.workers, s.queue, s.worker_settings())
        await self.pool.warm()

    async def stop(self) -> None:
        if self.upstream is not None:
            await self.upstream.aclose()
        if self.pool is not None:
            self.pool.shutdown()

    # -- routes ----------------------------------------------------------
    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def metrics_route(self, request: Request) -> Response:
        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def models(self, request: Request) -> Response:
        return await self._guarded("models", request, self._models)

    async def chat(self, request: Request) -> Response:
        return await self._guarded("chat", request, lambda r: self._generate(r, "chat"))

    async def completions(self, request: Request) -> Response:
        return await self._guarded("completions", request, lambda r: self._generate(r, "completions"))

    async def _guarded(self, route: str, request: Request, handler) -> Response:
        m = self.metrics
        m.in_flight.inc()
        try:
            self._authorize(request)
            response = await handler(request)
            outcome = str(response.status_code)
        except ApiError as exc:
            response, outcome = error_response(exc), str(exc.status)
        except ClientDisconnect:
            response, outcome = Response(status_code=499), "client_disconnected"
        except Exception:  # a bug: an OpenAI-shaped 500, the traceback in the log, no request text
            log.exception("internal error on %s", route)
            response, outcome = error_response(ApiError(500, "internal error in catp serve")), "500"
        finally:
            m.in_flight.dec()
        m.requests.labels(route, outcome).inc()
        return response

    def _authorize(self, request: Request) -> None:
        key = self.settings.api_key
        if not key:
            return
        given = request.headers.get("authorization", "")
        token = given[7:] if given[:7].lower() == "bearer " else ""
        if not hmac.compare_digest(token.encode(), key.encode()):
            raise ApiError(401, "missing or wrong API key (Authorization: Bearer ...)", code="invalid_api_key")

    async def _models(self, request: Request) -> Response:
        start = time.perf_counter()
        resp = await self.upstream.send("GET", "/v1/models")
        body = await resp.aread()
        self.metrics.upstream_seconds.labels("models").observe(time.perf_counter() - start)
        return Response(body, status_code=resp.status_code, headers=passed_headers(resp))

    async def _read_body(self, request: Request) -> bytes:
        limit = self.settings.max_body
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ApiError(413, f"the request body is over {limit} bytes (--max-body)", code="body_too_large")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(413, f"the request body is over {limit} bytes (--max-body)", code="body_too_large")
            chunks.append(chunk)
        return b"".join(chunks)

    # -- generation ------------------------------------------------------
    async def _generate(self, request: Request, kind: str) -> Response:
        """Until the reply starts (all of a non-streamed one), a client that disconnects cancels the work: the
        pruning job is dropped and the upstream connection closed, which cancels the request in vLLM."""
        raw = await self._read_body(request)
        work = asyncio.ensure_future(self._generate_from(raw, kind))
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            done, _ = await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not work.done():
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)  # its cleanup closes the upstream request
        if work in done:
            return work.result()
        raise ClientDisconnect()

    async def _generate_from(self, raw: bytes, kind: str) -> Response:
        parsed = parse(raw, kind)
        path = "/v1/chat/completions" if kind == "chat" else "/v1/completions"
        headers: dict[str, str] = {"x-catp-pruned": "false"}
        content = parsed.forward_bytes()
        plan_out = None
        if parsed.control.mode != "off":
            plan_out = await self._plan(parsed, kind)
            if plan_out is not None:
                content = self._rebuilt(parsed, kind, plan_out)
                headers.update(self._plan_headers(plan_out))
        resp = await self._send(kind, path, content, parsed.request.stream)
        if resp.status_code == 400 and parsed.control.mode != "off":
            try:
                await resp.aread()
            finally:
                await resp.aclose()
            error = http_error("POST", self.upstream.root + path, resp)
            if isinstance(error, ContextLengthError):
                retry = await self._replan(parsed, kind, error, plan_out)
                if retry is not None:
                    self.metrics.reprunes.inc()
                    headers.update(self._plan_headers(retry))
                    headers["x-catp-reprunes"] = "1"
                    resp = await self._send(kind, path, self._rebuilt(parsed, kind, retry), parsed.request.stream)
        return await self._relay(resp, headers, kind, parsed.request.stream)

    async def _send(self, kind: str, path: str, content: bytes, stream: bool) -> httpx.Response:
        start = time.perf_counter()
        resp = await self.upstream.send("POST", path, content=content, stream=True)
        self.metrics.upstream_seconds.labels(kind).observe(time.perf_counter() - start)
        return resp

    async def _plan(self, parsed: Parsed, kind: str) -> dict[str, Any] | None:
        """None when the request fits as it is (it is then forwarded unchanged); else the pruned request."""
        control = parsed.control
        job = self._job(parsed, kind)
        if job is None:
            return None
        forced = control.mode == "always" or control.budget is not None or control.ratio is not None
        if not forced:
            facts = await self.upstream.facts()
            limit = facts.prompt_limit(parsed.request.model, job["max_tokens"], self.settings.concurrency)
            count_body = {"model": parsed.request.model or (facts.cards[0].id if facts.cards else None)}
            if kind == "chat":
                count_body.update(messages=parsed.body["messages"], add_generation_prompt=True)
            else:
                count_body["prompt"] = job["prompt"]
            tokens = await self.upstream.count(count_body)
            if tokens is None or limit is None or tokens <= limit:
                return None  # fits; or the upstream cannot count it (e.g. an unknown model): it answers itself
            job["tokens_before"] = tokens
        return await self._run_plan(job)

    async def _replan(self, parsed: Parsed, kind: str, error: ContextLengthError,
                      first: dict[str, Any] | None) -> dict[str, Any] | None:
        job = self._job(parsed, kind)
        if job is None:
            return None
        max_tokens = job["max_tokens"]
        sent = error.prompt_tokens or (first or {}).get("tokens_after")
        limits = [lim for lim in ((error.limit - max_tokens) if error.limit else None,
                                  (first or {}).get("limit")) if lim]
        limit = min(limits) if limits else None
        if sent and limit and sent <= limit:
            limit = sent - 1  # the engine counts more than the plan did: aim under what it refused
        if limit is None:
            limit = int(sent * 0.8) if sent else None
        if limit is None or limit < 1:
            return None
        job["limit"] = int(limit * 0.9)
        log.warning("the upstream refused a prompt as too long (%s tokens); pruning again to %d", sent, job["limit"])
        return await self._run_plan(job)

    def _job(self, parsed: Parsed, kind: str) -> dict[str, Any] | None:
        job = {"kind": kind, "model": parsed.request.model, "control": parsed.control.model_dump(),
               "max_tokens": parsed.max_tokens or self.settings.max_tokens,
               "concurrency": self.settings.concurrency}
        if kind == "chat":
            job["messages"] = parsed.body["messages"]
        else:
            prompt = parsed.body["prompt"]
            if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
                prompt = prompt[0]
            if not isinstance(prompt, str):
                return None  # token ids or several prompts: passed through as they are
            job["prompt"] = prompt
        return job

    async def _run_plan(self, job: dict[str, Any]) -> dict[str, Any]:
        m = self.metrics
        m.queue_depth.inc()
        try:
            out = await self.pool.run(job)
        finally:
            m.queue_depth.dec()
        if "error" in out:
            status, message, code = out["error"]
            raise ApiError(status, message, code=code)
        m.prune_seconds.observe(out["prune_s"])
        if out.get("tokens_before"):
            m.tokens_before.inc(out["tokens_before"])
        m.tokens_after.inc(out["tokens_after"])
        m.dropped_protected.inc(out["dropped_protected"])
        return out

    @staticmethod
    def _rebuilt(parsed: Parsed, kind: str, plan_out: dict[str, Any]) -> bytes:
        body = dict(parsed.body)
        if kind == "chat":
            body["messages"] = plan_out["messages"]
        else:
            body["prompt"] = plan_out["prompt"]
        return jsonio.dumps(body)

    @staticmethod
    def _plan_headers(plan_out: dict[str, Any]) -> dict[str, str]:
        before = plan_out.get("tokens_before")
        return {"x-catp-pruned": "true" if plan_out.get("pruned", True) else "false",
                "x-catp-prompt-tokens-before": str(before) if before is not None else "unknown",
                "x-catp-prompt-tokens-after": str(plan_out["tokens_after"]),
                "x-catp-dropped-protected": str(plan_out["dropped_protected"]),
                "x-catp-question-aware": "true" if plan_out.get("question_aware") else "false"}

    async def _relay(self, resp: httpx.Response, headers: dict[str, str], kind: str, stream: bool) -> Response:
        """The upstream's reply as it is, plus the x-catp-* headers; a stream chunk by chunk."""
        out_headers = {**passed_headers(resp), **headers}
        if resp.is_stream_consumed or not stream or resp.status_code != 200:
            try:
                body = await resp.aread()
            finally:
                await resp.aclose()  # cancelled mid-body too: closing the connection cancels the upstream request
            return Response(body, status_code=resp.status_code, headers=out_headers)

        async def chunks():
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
            except httpx.HTTPError as exc:  # the upstream died mid-stream: say so in the stream, then end it
                log.warning("the upstream stream broke: %s", type(exc).__name__)
                self.metrics.requests.labels(kind, "upstream_broke_mid_stream").inc()
                error = error_body(502, f"the upstream stream broke ({type(exc).__name__})", "upstream_broken")
                yield f"data: {json.dumps(error)}\n\n".encode()
            finally:
                await resp.aclose()  # on a client disconnect too: closing the connection cancels the upstream request

        return StreamingResponse(chunks(), status_code=resp.status_code, headers=out_headers)


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone. Called once the body is read, so it only ever sees http.disconnect."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def create_app(settings: ServeSettings) -> Starlette:
    gateway = Gateway(settings)

    @asynccontextmanager
    async def lifespan(app):
        await gateway.start()
        try:
            yield
        finally:
            await gateway.stop()

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        return error_response(ApiError(status, getattr(exc, "detail", "error") or "error"))

    app = Starlette(routes=[
        Route("/health", gateway.health, methods=["GET"]),
        Route("/metrics", gateway.metrics_route, methods=["GET"]),
        Route("/v1/models", gateway.models, methods=["GET"]),
        Route("/v1/chat/completions", gateway.chat, methods=["POST"]),
        Route("/v1/completions", gateway.completions, methods=["POST"]),
    ], lifespan=lifespan, exception_handlers={404: not_found, 405: not_found})
    app.state.gateway = gateway
    return app
