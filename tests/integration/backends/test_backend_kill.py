"""A REAL vLLM server that stops answering, or dies, in the middle of a stream:
a clear BackendError within the read timeout, never a hang.

It uses a private server (vllm_server_factory), since the test breaks it, serving a tiny model
with a 32k context: its answer (ignore_eos, 30k tokens) lasts long enough on a busy machine
for the server to be broken while it streams.
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest

from catp.backends.client import VLLMClient
from catp.errors import BackendError
from conftest import build_tiny_model

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

HANG_GUARD_S = 120
LONG_LEN = 32768
MESSAGES = [{"role": "user", "content": "Tell me about the Licensee and the fee of $5,000."}]
LONG = {"ignore_eos": True}  # vLLM's own option: keep generating to max_tokens, so the stream is long


def stream_until_broken(client: VLLMClient, on_first_delta) -> tuple[BackendError | None, list[str]]:
    """Stream a long answer; after the first delta, call on_first_delta (which breaks the server)."""
    seen: list[str] = []

    def on_delta(text: str) -> None:
        seen.append(text)
        if len(seen) == 1:
            on_first_delta()

    def run():
        try:
            client.chat(MESSAGES, max_tokens=LONG_LEN - 100, on_delta=on_delta, extra=LONG)
        except BackendError as exc:
            return exc
        return None

    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(run).result(timeout=HANG_GUARD_S), seen
    finally:
        pool.shutdown(wait=False)


def test_server_stopped_then_killed_mid_stream(vllm_server_factory, tmp_path):
    model = build_tiny_model(tmp_path / "long-model", max_len=LONG_LEN)
    server = vllm_server_factory(model, max_model_len=LONG_LEN)
    group = server.process.pid  # its own process group: API server + engine core
    client = VLLMClient(server, read_timeout=3, retries=0)

    # 1. The server freezes (SIGSTOP): the connection stays open but no data comes.
    err, seen = stream_until_broken(client, lambda: os.killpg(group, signal.SIGSTOP))
    os.killpg(group, signal.SIGCONT)
    assert err is not None, "the stream finished although the server was stopped"
    print(f"\n[stopped] after {len(seen)} deltas: {err}")
    assert "(read timeout)" in str(err) and f"{server}/chat/completions" in str(err)
    assert seen, "at least the first delta arrived before the stop"

    # the thawed server still answers (a patient client: the machine may be busy), so the next
    # failure is the kill's alone
    with VLLMClient(server, read_timeout=120, retries=0) as patient:
        assert patient.chat(MESSAGES, max_tokens=2, extra=LONG).completion_tokens == 2

    # 2. The server dies (SIGKILL): the connection closes before [DONE].
    err, seen = stream_until_broken(client, lambda: os.killpg(group, signal.SIGKILL))
    assert err is not None, "the stream finished although the server was killed"
    print(f"[killed] after {len(seen)} deltas: {err}")
    message = str(err)
    assert "mid-stream" in message or "without [DONE]" in message, message
    assert "\n" not in message and seen
    server.process.wait(timeout=10)
