"""STAND-IN servers for the backend tests: a tiny real HTTP server (stdlib http.server on 127.0.0.1, in a thread)
that misbehaves on cue, because a real vLLM server cannot be made to send garbage JSON, HTTP 500/429 or a stalled
stream on demand; and the helpers that call it with a bounded wait. Shared by tests/integration/backends/ and
tests/integration/cli/."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from catp.backends.client import VLLMClient
from catp.errors import BackendError

Action = Callable[["_Handler"], None]


class _QuietServer(ThreadingHTTPServer):
    """The faults drop connections on purpose: a client that has gone is not worth a traceback on stderr."""

    def handle_error(self, request, client_address) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class StandIn:
    def __init__(self) -> None:
        self.script: list[Action] = []
        self.requests: list[dict] = []
        self.release = threading.Event()  # ends every stall at teardown
        self._server = _QuietServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.standin = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def next_action(self) -> Action:
        return self.script.pop(0) if self.script else reply(500, {"error": {"message": "script exhausted"}})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        standin: StandIn = self.server.standin
        standin.requests.append({"method": self.command, "path": self.path,
                                 "headers": dict(self.headers), "body": json.loads(body) if body else None})
        standin.next_action()(self)

    do_GET = do_POST = _serve


# -- actions -------------------------------------------------------------------------------

def reply(status: int, body: object, headers: dict[str, str] | None = None) -> Action:
    data = body if isinstance(body, bytes) else (body.encode() if isinstance(body, str) else json.dumps(body).encode())

    def act(h: _Handler) -> None:
        h.send_response(status)
        for k, v in {"content-type": "application/json", **(headers or {})}.items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    return act


def chat_ok(text: str = "ok", prompt_tokens: int = 7) -> Action:
    return reply(200, {"id": "x", "object": "chat.completion", "model": "stand-in",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1}})


def sse_chunk(text: str, finish: str | None = None) -> str:
    return "data: " + json.dumps({"object": "chat.completion.chunk", "model": "stand-in",
                                  "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]})


def stream(lines: list[str], *, done: bool = True, cut: bool = False, stall_after: int | None = None) -> Action:
    """Chunked SSE. `cut`: drop the connection mid-body (no final chunk), as a killed server does.
    `stall_after`: send that many lines, then go silent until the test ends."""

    def act(h: _Handler) -> None:
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()
        events = [*lines, "data: [DONE]"] if done else list(lines)
        for i, line in enumerate(events):
            if stall_after is not None and i == stall_after:
                h.wfile.flush()
                h.server.standin.release.wait(60)
                return
            payload = (line + "\n\n").encode()
            h.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            h.wfile.flush()
        if cut:
            h.wfile.write(b"40\r\ndata: {\"choi")  # half a chunk, then the socket closes
            h.wfile.flush()
            h.close_connection = True
            return
        h.wfile.write(b"0\r\n\r\n")

    return act


def stall() -> Action:
    """Accept the request and never answer (until the test ends)."""

    def act(h: _Handler) -> None:
        h.server.standin.release.wait(60)
        h.close_connection = True

    return act


def drop() -> Action:
    """Close the connection without a response."""

    def act(h: _Handler) -> None:
        h.close_connection = True

    return act


HANG_GUARD_S = 30  # a call that takes longer than this is hung; the timeouts under test are far shorter
MESSAGES = [{"role": "user", "content": "hi"}]


def client_for(url: str, **kwargs) -> VLLMClient:
    options = {"model": "stand-in", "connect_timeout": 2.0, "read_timeout": 1.0, "retries": 2,
               "backoff_s": 0.01, "max_backoff_s": 0.05, **kwargs}
    return VLLMClient(url, **options)


def bounded(fn: Callable[[], object]) -> object:
    """Run fn; fail the test (instead of hanging the suite) if it does not return in HANG_GUARD_S."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn).result(timeout=HANG_GUARD_S)
    except FutureTimeout:
        pytest.fail(f"hung for more than {HANG_GUARD_S}s")
    finally:
        pool.shutdown(wait=False)


def raises_backend_error(fn: Callable[[], object]) -> BackendError:
    def run():
        try:
            fn()
        except BackendError as exc:
            return exc
        return None

    err = bounded(run)
    assert err is not None, "expected a BackendError"
    assert "\n" not in str(err), "errors are one line"
    return err


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens on it once the socket is closed



def cut_answer_route(h) -> None:
    """A vLLM stand-in whose chat stream is cut after part of the answer."""
    body = h.server.standin.requests[-1]["body"]
    if h.path.endswith("/models"):
        reply(200, {"object": "list", "data": [{"id": "stand-in", "max_model_len": 4096}]})(h)
    elif h.path.endswith("/tokenize"):
        reply(200, {"count": len(json.dumps(body)) // 3, "max_model_len": 4096})(h)
    elif h.path.endswith("/chat/completions"):
        stream([sse_chunk("The fee "), sse_chunk("is $5,000")], done=False, cut=True)(h)
    else:
        reply(404, {"error": {"message": "not found"}})(h)


