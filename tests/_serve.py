"""Helpers for the gateway tests: start `catp serve` as a real process, and a recording proxy.

`start_gateway(upstream, *args)` runs `python -m catp serve` on a free port and waits for /health.
`RecordingProxy` sits between a gateway and the real vLLM server: it passes every request through unchanged
and keeps the bodies it saw, so a test can check what the gateway forwarded. With `max_model_len=N` it
rewrites that one figure of /v1/models (a stale or misreporting engine), so that the real server's real
400-for-length reaches the gateway. With `pace=s` it relays a streamed answer one SSE line at a time, s seconds
apart, and notes when it sent each data line (`relayed_at`, time.monotonic): the real engine's tokens then
reach the gateway spread over time, however fast the engine ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 180


class Gateway:
    def __init__(self, proc: subprocess.Popen, port: int, log_path: Path) -> None:
        self.proc, self.port, self.log_path = proc, port, log_path
        self.root = f"http://127.0.0.1:{port}"
        self.base = self.root + "/v1"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                raise AssertionError(f"catp serve did not stop within {timeout}s of signal {sig}")
        return self.proc.returncode


def start_gateway(upstream: str, *args: str, log_path: Path, env: dict | None = None) -> Gateway:
    port = free_port()
    cmd = [sys.executable, "-m", "catp", "serve", "--upstream", upstream, "--port", str(port), *args]
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    log.close()
    gateway = Gateway(proc, port, log_path)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"catp serve exited with {proc.returncode}:\n{gateway.log()}")
        if "catp serve: ready" in gateway.log():
            assert httpx.get(gateway.root + "/health", timeout=5).status_code == 200
            return gateway
        if time.monotonic() > deadline:
            gateway.stop(signal.SIGKILL)
            raise RuntimeError(f"catp serve not ready after {START_TIMEOUT}s:\n{gateway.log()}")
        time.sleep(0.3)


class RecordingProxy:
    """A pass-through HTTP proxy on 127.0.0.1 (uvicorn in a thread) that records request bodies by path."""

    def __init__(self, upstream_root: str, *, max_model_len: int | None = None, pace: float = 0) -> None:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response, StreamingResponse
        from starlette.routing import Route

        self.bodies: dict[str, list[bytes]] = {}
        self.statuses: dict[str, list[int]] = {}
        self.max_model_len = max_model_len
        self.relayed_at: list[float] = []

        async def paced(body: bytes, path: str):
            async with httpx.AsyncClient(timeout=300, trust_env=False) as client:
                async with client.stream("POST", upstream_root + path, content=body,
                                         headers={"content-type": "application/json"}) as resp:
                    self.statuses.setdefault(path, []).append(resp.status_code)
                    async for line in resp.aiter_lines():  # SSE: one event a data line (blank lines dropped)
                        if line.startswith("data:"):
                            await asyncio.sleep(pace)
                            yield line + "\n\n"
                            self.relayed_at.append(time.monotonic())
                        elif line:
                            yield line + "\n"

        async def forward(request: Request) -> Response:
            body = await request.body()
            path = request.url.path
            self.bodies.setdefault(path, []).append(body)
            if pace and request.method == "POST" and _asks_to_stream(body):
                return StreamingResponse(paced(body, path), media_type="text/event-stream")
            async with httpx.AsyncClient(timeout=300, trust_env=False) as client:
                resp = await client.request(request.method, upstream_root + path, content=body,
                                            headers={"content-type": request.headers.get("content-type",
                                                                                         "application/json")})
            self.statuses.setdefault(path, []).append(resp.status_code)
            content = resp.content
            if path == "/v1/models" and self.max_model_len:
                data = resp.json()
                for card in data["data"]:
                    card["max_model_len"] = self.max_model_len
                import json

                content = json.dumps(data).encode()
            return Response(content, status_code=resp.status_code,
                            media_type=resp.headers.get("content-type"))

        app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST"])])
        self.port = free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the recording proxy did not start")
            time.sleep(0.05)

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def _asks_to_stream(body: bytes) -> bool:
    try:
        return json.loads(body).get("stream") is True
    except (ValueError, AttributeError):
        return False


def run_async(coro):
    return asyncio.run(coro)
