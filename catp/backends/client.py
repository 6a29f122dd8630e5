"""A client for vLLM's OpenAI-compatible server, on httpx.

One object covers what catp needs: `/v1/models` (max_model_len), `/tokenize`
(exact prompt counts, chat template included), `/metrics` (KV-cache size),
chat and completions, streamed or not. Connection errors, 429 and 5xx are
retried a bounded number of times with exponential backoff; every failure
becomes a one-line `BackendError` naming the URL and the status.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError

from catp.backends.messages import normalize_messages
from catp.backends.schemas import (
    ChatReply,
    CompletionReply,
    Generation,
    KvCache,
    ModelCard,
    ModelList,
    StreamChunk,
    TokenizeReply,
)
from catp.decode import has_lone_surrogates
from catp.errors import BackendError, CatpError

log = logging.getLogger("catp.backends.client")

API_KEY_ENV = ("CATP_API_KEY", "OPENAI_API_KEY")
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 120.0
DEFAULT_TOTAL_TIMEOUT = 600.0  # one request, retries, body and stream included
MAX_BODY_BYTES = 64 << 20  # a reply's body; an endless one is cut here, not read into memory
MAX_LINE_BYTES = 4 << 20  # one line of a stream
STREAM_SLACK_TOKENS = 16  # stream chunks of text past max_tokens before reading stops
MAX_CHARS_PER_TOKEN = 64
_CONNECTION_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout,
                      httpx.RemoteProtocolError, httpx.WriteError, httpx.WriteTimeout)


class ContextLengthError(BackendError):
    """HTTP 400: the prompt does not fit the model's context window."""

    def __init__(self, message: str, *, limit: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(message)
        self.limit, self.prompt_tokens = limit, prompt_tokens


def api_key_from_env() -> str | None:
    for name in API_KEY_ENV:
        if os.environ.get(name):
            return os.environ[name]
    return None


def split_server_url(server: str) -> tuple[str, str]:
    """'http://h:8000' or 'http://h:8000/v1' -> (root, base) = ('http://h:8000', 'http://h:8000/v1')."""
    url = server.strip().rstrip("/")
    if not re.match(r"^https?://[^/\s]+", url):
        raise CatpError(f"server URL must start with http:// or https:// and name a host: {server!r}")
    if has_lone_surrogates(url):  # bytes that are not UTF-8 on the command line
        raise CatpError(f"server URL {server!r} holds lone surrogates (not valid UTF-8)")
    try:  # brackets, ports and the like: httpx refused them only when the first request was built
        httpx.URL(url).copy_with()
        httpx.Request("GET", url)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise CatpError(f"server URL {server!r} is not a valid URL ({exc})") from None
    root = url[: -len("/v1")] if url.endswith("/v1") else url
    return root, root + "/v1"


class VLLMClient:
    """Reusable client for one server; thread-compatible like `httpx.Client`. Close it or use `with`."""

    def __init__(
        self,
        server: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
    ) -> None:
        self.root_url, self.base_url = split_server_url(server)
        self.name = f"vLLM server {self.base_url}"
        self.tokenize_source = f"POST {self.root_url}/tokenize (messages, chat template)"
        self.max_model_len_source = f"GET {self.base_url}/models max_model_len"
        self.retries, self.backoff_s, self.max_backoff_s = max(0, retries), backoff_s, max_backoff_s
        self.read_timeout = read_timeout
        self.timeout = timeout  # seconds for a whole request (None: none); each read also waits read_timeout at most
        key = api_key or api_key_from_env()
        if key and not (key.isascii() and key.isprintable()):  # an HTTP header: never shown in the message
            raise CatpError("the API key (--api-key, CATP_API_KEY or OPENAI_API_KEY) must be printable ASCII")
        if model is not None and has_lone_surrogates(model):
            raise CatpError(f"model name {model!r} holds lone surrogates (not valid UTF-8)")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout, pool=connect_timeout)
        self._http = httpx.Client(timeout=timeout, headers=headers, trust_env=False)
        self._model = model
        self._card: ModelCard | None = None

    # -- lifecycle -------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> VLLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- engine facts ----------------------------------------------------
    def list_models(self) -> list[ModelCard]:
        return self._get_model("GET", self.base_url + "/models", ModelList).data

    def model_card(self) -> ModelCard:
        """The card of the model in use: the one named, or the only/first one served."""
        if self._card is None:
            cards = self.list_models()
            if not cards:
                raise BackendError(f"{self.base_url}/models: the server serves no model")
            if self._model is None:
                self._card = cards[0]
            else:
                match = [c for c in cards if c.id == self._model]
                if not match:
                    served = ", ".join(c.id for c in cards)
                    raise BackendError(f"{self.base_url}/models: model {self._model!r} is not served (served: {served})")
                self._card = match[0]
        return self._card

    @property
    def model(self) -> str:
        return self._model or self.model_card().id

    def max_model_len(self) -> int | None:
        return self.model_card().max_model_len

    def tokenizer_path(self) -> str | None:
        """The served model's folder, when it is on this machine with a tokenizer.json in it."""
        root = self.model_card().root
        return root if root and Path(root, "tokenizer.json").is_file() else None

    def count_chat_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        """Exact prompt tokens of a chat request, chat template and generation prompt included."""
        msgs, _ = normalize_messages(messages)
        body = {"model": self.model, "messages": msgs, "add_generation_prompt": True}
        return self._post_model(self.root_url + "/tokenize", body, TokenizeReply).count

    def count_text_tokens(self, text: str) -> int:
        body = {"model": self.model, "prompt": text, "add_special_tokens": False}
        return self._post_model(self.root_url + "/tokenize", body, TokenizeReply).count

    def kv_cache(self) -> KvCache | None:
        """KV-cache capacity from `/metrics` (`vllm:cache_config_info`); None if not reported."""
        resp = self._send("GET", self.root_url + "/metrics")
        return parse_cache_config(resp.text, source=f"GET {self.root_url}/metrics vllm:cache_config_info")

    # -- generation ------------------------------------------------------
    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        on_delta: Callable[[str], None] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Generation:
        """One chat answer. With `on_delta`, it streams and calls it with each piece of text."""
        msgs, warnings = normalize_messages(messages)
        for w in warnings:
            log.debug("%s: %s", self.base_url, w)
        body = {"model": self.model, "messages": msgs, "max_tokens": max_tokens,
                "temperature": temperature, **(extra or {})}
        url = self.base_url + "/chat/completions"
        if on_delta is None:
            reply = self._post_model(url, body, ChatReply)
            choice = reply.choices[0]
            gen = Generation(text=choice.message.content or "", finish_reason=choice.finish_reason,
                             model=reply.model, prompt_token_ids=reply.prompt_token_ids,
                             prompt_tokens=reply.usage.prompt_tokens if reply.usage else None,
                             completion_tokens=reply.usage.completion_tokens if reply.usage else None)
        else:
            gen = _drain(self.stream_events(url, body), on_delta)
        gen.warnings = warnings
        return gen

    def stream_chat(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int,
                    temperature: float = 0.0, extra: Mapping[str, Any] | None = None) -> Iterator[str]:
        """Yield the answer's text as it arrives."""
        msgs, _ = normalize_messages(messages)
        body = {"model": self.model, "messages": msgs, "max_tokens": max_tokens,
                "temperature": temperature, **(extra or {})}
        for item in self.stream_events(self.base_url + "/chat/completions", body):
            if isinstance(item, str):
                yield item

    def complete(self, prompt: str, *, max_tokens: int, temperature: float = 0.0,
                 on_delta: Callable[[str], None] | None = None,
                 extra: Mapping[str, Any] | None = None) -> Generation:
        """A plain completion (no chat template)."""
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens,
                "temperature": temperature, **(extra or {})}
        url = self.base_url + "/completions"
        if on_delta is not None:
            return _drain(self.stream_events(url, body), on_delta)
        reply = self._post_model(url, body, CompletionReply)
        choice = reply.choices[0]
        return Generation(text=choice.text, finish_reason=choice.finish_reason, model=reply.model,
                          prompt_tokens=reply.usage.prompt_tokens if reply.usage else None,
                          completion_tokens=reply.usage.completion_tokens if reply.usage else None)

    def post_json(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST to `path` under /v1 (e.g. '/completions' with prompt_logprobs) and return the JSON."""
        url = self.base_url + path if path.startswith("/") else f"{self.base_url}/{path}"
        resp = self._send("POST", url, json=dict(body))
        data = _json(resp, url)
        if not isinstance(data, dict):
            raise BackendError(f"{url}: HTTP {resp.status_code}: expected a JSON object, got {type(data).__name__}")
        return data

    # -- streaming -------------------------------------------------------
    def stream_events(self, url: str, body: Mapping[str, Any]) -> Iterator[str | Generation]:
        """Yield text deltas, then one final `Generation`. Never hangs: each read is bounded by
        the read timeout, and a connection closed before `[DONE]` is an error."""
        payload = {**body, "stream": True, "stream_options": {"include_usage": True}}
        deadline = self._deadline()
        resp = self._send("POST", url, json=payload, stream=True, deadline=deadline)
        max_tokens = body.get("max_tokens")
        most = None if not isinstance(max_tokens, int) else max_tokens + STREAM_SLACK_TOKENS
        texts = chars = 0
        parts: list[str] = []
        finish = model = None
        usage = None
        chunks = 0
        done = False
        try:
            for line in _lines(resp, url, deadline, self.timeout):
                if not line.startswith("data:"):
                    continue  # blank separators, ': keep-alive' comments, 'event:' lines
                data = line[5:].strip()
                if data == "[DONE]":
                    done = True
                    break
                chunk = _stream_chunk(data, url, chunks)
                chunks += 1
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices[:1]:
                    text = choice.delta.content if choice.delta else choice.text
                    finish = choice.finish_reason or finish
                    if text:
                        texts, chars = texts + 1, chars + len(text)
                        if most is not None and (texts > most or chars > most * MAX_CHARS_PER_TOKEN):
                            raise BackendError(f"{url}: the server streamed more than max_tokens ({max_tokens}) "
                                               "allows; stopped reading")
                        parts.append(text)
                        yield text
        except httpx.ReadTimeout as exc:
            raise BackendError(f"{url}: no data for {self.read_timeout:g}s after {chunks} stream chunks "
                               "(read timeout); the server may be stuck") from exc
        except (httpx.TransportError, httpx.StreamError) as exc:
            raise BackendError(f"{url}: the connection broke mid-stream after {chunks} chunks "
                               f"({type(exc).__name__}: {exc or 'closed'})") from exc
        finally:
            resp.close()
        if not done:
            raise BackendError(f"{url}: the stream ended after {chunks} chunks without [DONE] (truncated)")
        yield Generation(text="".join(parts), finish_reason=finish, model=model, streamed=True,
                         prompt_tokens=usage.prompt_tokens if usage else None,
                         completion_tokens=usage.completion_tokens if usage else None)

    # -- transport -------------------------------------------------------
    def _get_model(self, method: str, url: str, schema: type[BaseModel]) -> Any:
        return _validate(schema, _json(self._send(method, url), url), url)

    def _post_model(self, url: str, body: Mapping[str, Any], schema: type[BaseModel]) -> Any:
        return _validate(schema, _json(self._send("POST", url, json=dict(body)), url), url)

    def _deadline(self) -> float | None:
        return None if self.timeout is None else time.monotonic() + self.timeout

    def _request_timeout(self, method: str, url: str, deadline: float | None) -> httpx.Timeout:
        """The client's timeouts, none of them past the deadline."""
        timeout = self._http.timeout
        if deadline is None:
            return timeout
        left = _time_left(deadline, f"{method} {url}", self.timeout)
        return httpx.Timeout(connect=min(timeout.connect, left), read=min(timeout.read, left),
                             write=min(timeout.write, left), pool=min(timeout.pool, left))

    def _send(self, method: str, url: str, *, json: Any = None, stream: bool = False,
              deadline: float | None = None) -> httpx.Response:
        """Send with bounded retries on connection errors, 429 and 5xx; raise BackendError otherwise. The whole
        of it, a body read too (at most MAX_BODY_BYTES), ends by the deadline (the total timeout). With `stream`
        the body is left to read (`_lines`)."""
        deadline = self._deadline() if deadline is None else deadline
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            retry_after = None
            try:
                request = self._http.build_request(method, url, json=json,
                                                   timeout=self._request_timeout(method, url, deadline))
                resp = self._http.send(request, stream=True)
            except _CONNECTION_ERRORS as exc:
                error = BackendError(f"{method} {url}: cannot reach the server "
                                     f"({type(exc).__name__}: {exc or 'no detail'})")
            except httpx.ReadTimeout as exc:
                raise BackendError(f"{method} {url}: no response within {self.read_timeout:g}s (read timeout)") from exc
            except httpx.HTTPError as exc:
                raise BackendError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
            else:
                if resp.status_code < 400 and stream:
                    return resp
                resp = _read_body(resp, f"{method} {url}", deadline, self.timeout)
                if resp.status_code < 400:
                    return resp
                error = http_error(method, url, resp)
                if resp.status_code != 429 and resp.status_code < 500:
                    raise error
                retry_after = _retry_after(resp)
            if attempt == attempts:
                suffix = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
                raise BackendError(f"{error}{suffix}")
            delay = min(self.max_backoff_s, retry_after if retry_after is not None
                        else self.backoff_s * 2 ** (attempt - 1))
            if deadline is not None:
                delay = min(delay, max(0.0, deadline - time.monotonic()))
            log.warning("%s; retry %d/%d in %.1fs", error, attempt, attempts - 1, delay)
            time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


def _time_left(deadline: float, what: str, total: float | None) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise BackendError(f"{what}: no complete reply within the total timeout of {total:g}s")
    return left


def _read_body(resp: httpx.Response, what: str, deadline: float | None, total: float | None) -> httpx.Response:
    """The response with its body read: at most MAX_BODY_BYTES, and by the deadline (a body that drips a byte at
    a time passes every read timeout)."""
    body, size = [], 0
    try:
        for chunk in resp.iter_bytes():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise BackendError(f"{what}: HTTP {resp.status_code}: the reply is over {MAX_BODY_BYTES:,} bytes; "
                                   "not read further")
            if deadline is not None:
                _time_left(deadline, what, total)
            body.append(chunk)
    except httpx.ReadTimeout as exc:
        raise BackendError(f"{what}: HTTP {resp.status_code}: the body stalled (read timeout)") from exc
    except (httpx.TransportError, httpx.StreamError) as exc:
        raise BackendError(f"{what}: HTTP {resp.status_code}: the connection broke while reading the body "
                           f"({type(exc).__name__}: {exc or 'closed'})") from exc
    finally:
        resp.close()
    headers = {k: v for k, v in resp.headers.items() if k.lower() not in ("content-encoding", "content-length",
                                                                             "transfer-encoding")}
    return httpx.Response(resp.status_code, headers=headers, content=b"".join(body), request=resp.request)


def _lines(resp: httpx.Response, url: str, deadline: float | None, total: float | None) -> Iterator[str]:
    """A stream's lines (split at \\n, a \\r before it dropped), none longer than MAX_LINE_BYTES, all by the
    deadline (keep-alive comments pass every read timeout)."""
    buffer = b""
    for chunk in resp.iter_bytes():
        if deadline is not None:
            _time_left(deadline, url, total)
        lines = (buffer + chunk).split(b"\n")
        buffer = lines.pop()
        if len(buffer) > MAX_LINE_BYTES:
            raise BackendError(f"{url}: a stream line over {MAX_LINE_BYTES:,} bytes; not read further")
        for line in lines:
            yield line.removesuffix(b"\r").decode("utf-8", "replace")
    if buffer:
        yield buffer.removesuffix(b"\r").decode("utf-8", "replace")


def http_error(method: str, url: str, resp: httpx.Response) -> BackendError:
    """A one-line error for an HTTP error reply; a `ContextLengthError` for a prompt that is too long."""
    message, param, code = _error_fields(resp)
    text = f"{method} {url}: HTTP {resp.status_code} {resp.reason_phrase}".rstrip()
    if message:
        text += f": {message}"
    if resp.status_code == 400 and param != "max_tokens" and (
        code == "context_length_exceeded" or _CONTEXT_RE.search(message or "")
    ):
        limit = _first_int(r"maximum context length is (\d+)", message)
        sent = _first_int(r"(?:contains at least|contains|requested) (\d+)", message)
        return ContextLengthError(text, limit=limit, prompt_tokens=sent)
    return BackendError(text)


_CONTEXT_RE = re.compile(r"maximum context length|context length|max_model_len|prompt is too long", re.I)


def parse_cache_config(metrics_text: str, *, source: str) -> KvCache | None:
    """Read num_gpu_blocks and block_size from the `vllm:cache_config_info` gauge (smallest engine)."""
    found: list[KvCache] = []
    for line in metrics_text.splitlines():
        if not line.startswith("vllm:cache_config_info{"):
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line))
        blocks, size = labels.get("num_gpu_blocks", ""), labels.get("block_size", "")
        reported = labels.get("kv_cache_size_tokens", "")
        if blocks.isdigit() and size.isdigit() and int(size) > 0:
            found.append(KvCache(num_blocks=int(blocks), block_size=int(size), source=source,
                                 reported_tokens=int(reported) if reported.isdigit() else None))
    return min(found, key=lambda kv: kv.tokens) if found else None


def _drain(events: Iterator[str | Generation], on_delta: Callable[[str], None]) -> Generation:
    final = None
    for item in events:
        if isinstance(item, str):
            on_delta(item)
        else:
            final = item
    assert final is not None  # stream_events always ends with a Generation or raises
    return final


def _json(resp: httpx.Response, url: str) -> Any:
    try:
        return resp.json()
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError; nested too deep
        snippet = resp.text[:80].replace("\n", " ")
        raise BackendError(f"{url}: HTTP {resp.status_code} but the body is not valid JSON "
                           f"({exc.__class__.__name__}): {snippet!r}") from exc


def _validate(schema: type[BaseModel], data: Any, url: str) -> Any:
    try:
        return schema.model_validate(data)
    except RecursionError as exc:
        raise BackendError(f"{url}: unexpected reply (nested too deeply)") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "body"
        raise BackendError(f"{url}: unexpected reply ({where}: {first['msg']})") from exc


def _stream_chunk(data: str, url: str, index: int) -> StreamChunk:
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BackendError(f"{url}: stream chunk {index} is not valid JSON: {data[:80]!r}") from exc
    if isinstance(obj, dict) and "error" in obj:
        err = obj["error"]
        message = err.get("message") if isinstance(err, dict) else err
        raise BackendError(f"{url}: the server reported an error mid-stream: {message}")
    return _validate(StreamChunk, obj, url)


def _error_fields(resp: httpx.Response) -> tuple[str, str | None, str | None]:
    try:
        data = resp.json()
    except (ValueError, RecursionError):
        return resp.text.strip().replace("\n", " ")[:200], None, None
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        code = err.get("code")
        return str(err.get("message") or err.get("detail") or ""), err.get("param"), (
            code if isinstance(code, str) else None)
    return str(err)[:200], None, None


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _first_int(pattern: str, text: str | None) -> int | None:
    match = re.search(pattern, text or "")
    return int(match.group(1)) if match else None
