"""`catp serve` in front of the REAL vLLM CPU server (tests/conftest.py's session server, the tiny model with
max_model_len 2048), with the real openai SDK as the client.

Two gateways run as real processes: `gateway` talks to vLLM directly; `proxied` talks to it through a
RecordingProxy (tests/_serve.py) that passes every request through unchanged and keeps the bodies, so the
tests can see what the gateway forwarded. That proxy reports max_model_len 4096 instead of 2048 (a stale or
misreporting engine) so that vLLM's own 400-for-length reaches the gateway and it must prune again.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import time
from pathlib import Path

import httpx
import openai
import pytest

from _serve import RecordingProxy, start_gateway
from conftest import build_tiny_model, start_vllm_server, stop_vllm_server

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parents[3]
CONTRACT = (ROOT / "examples" / "contract_en.txt").read_text()
QUESTION = "What is the governing law of this agreement?"
SYSTEM = "You answer questions about contracts. Quote the clause."
ANSWER_LEN = 8
LONG = {"ignore_eos": True}  # vLLM's option: a random model must still answer max_tokens tokens
LONG_LEN = 32768  # a model that streams for this long: no loaded engine finishes it before a client goes


@pytest.fixture(scope="module")
def gateway(vllm_server, tmp_path_factory):
    gw = start_gateway(vllm_server.root, "--workers", "1", "--domain", "legal",
                       log_path=tmp_path_factory.mktemp("gw") / "gateway.log")
    yield gw
    assert gw.stop() == 0


@pytest.fixture(scope="module")
def proxy(vllm_server):
    p = RecordingProxy(vllm_server.root, max_model_len=4096)
    yield p
    p.close()


@pytest.fixture(scope="module")
def proxied(proxy, tmp_path_factory):
    gw = start_gateway(proxy.root, "--workers", "1", "--queue", "0",
                       log_path=tmp_path_factory.mktemp("gwp") / "gateway.log")
    yield gw
    assert gw.stop() == 0


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("long-model") / "model", max_len=LONG_LEN)


@pytest.fixture(scope="module")
def long_server(vllm_server, long_model, tmp_path_factory):  # vllm_server: its skip (CATP_SKIP_VLLM) applies here
    server = start_vllm_server(long_model, tmp_path_factory.mktemp("vllm-long") / "server.log", max_model_len=LONG_LEN)
    yield server
    stop_vllm_server(server)


@pytest.fixture(scope="module")
def long_gateway(long_server, tmp_path_factory):
    gw = start_gateway(long_server.root, "--workers", "1", log_path=tmp_path_factory.mktemp("gwl") / "gateway.log")
    yield gw
    assert gw.stop() == 0


def sdk(gw, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base, api_key="unused", max_retries=0, timeout=300, **kwargs)


def catp_headers(raw) -> dict[str, str]:
    return {k: v for k, v in raw.headers.items() if k.startswith("x-catp-")}


def long_chat(question: str = QUESTION) -> list[dict[str, str]]:
    return [{"role": "user", "content": CONTRACT}, {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question}]


def generated(vllm_server) -> float:
    text = httpx.get(vllm_server.root + "/metrics", timeout=10).text
    return sum(float(v) for v in re.findall(r"^vllm:generation_tokens_total\{[^}]*\} (\S+)", text, re.M))


def test_short_chat_passes_through_unpruned(gateway, vllm_server):
    client = sdk(gateway)
    raw = client.chat.completions.with_raw_response.create(
        model=vllm_server.model, messages=[{"role": "user", "content": "What is the fee?"}],
        max_tokens=ANSWER_LEN, temperature=0, extra_body=LONG)
    reply = raw.parse()
    assert catp_headers(raw) == {"x-catp-pruned": "false"}
    assert reply.usage.completion_tokens == ANSWER_LEN and reply.choices[0].message.content
    direct = openai.OpenAI(base_url=vllm_server, api_key="unused", max_retries=0).chat.completions.create(
        model=vllm_server.model, messages=[{"role": "user", "content": "What is the fee?"}],
        max_tokens=ANSWER_LEN, temperature=0, extra_body=LONG)
    assert direct.choices[0].message.content == reply.choices[0].message.content  # same request, same answer
    assert [m.id for m in client.models.list().data] == [vllm_server.model]


def test_document_longer_than_max_model_len_is_answered(gateway, vllm_server):
    direct = openai.OpenAI(base_url=vllm_server, api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError):  # what the application got without the gateway
        direct.chat.completions.create(model=vllm_server.model, messages=long_chat(), max_tokens=ANSWER_LEN)
    raw = sdk(gateway).chat.completions.with_raw_response.create(
        model=vllm_server.model, messages=long_chat(), max_tokens=ANSWER_LEN, extra_body=LONG)
    reply, headers = raw.parse(), catp_headers(raw)
    assert headers["x-catp-pruned"] == "true" and headers["x-catp-question-aware"] == "true"
    before, after = int(headers["x-catp-prompt-tokens-before"]), int(headers["x-catp-prompt-tokens-after"])
    assert before > vllm_server.max_model_len >= after + ANSWER_LEN
    assert reply.usage.prompt_tokens == after  # the gateway's count is the engine's own
    assert int(headers["x-catp-dropped-protected"]) >= 0 and reply.choices[0].message.content


def test_content_parts_are_pruned(gateway, vllm_server):
    """OpenAI's list content (text parts only: the tiny model takes no images) reaches vLLM's chat template
    pruned, and fits."""
    half = len(CONTRACT) // 2
    parts = [{"type": "text", "text": CONTRACT[:half]}, {"type": "text", "text": CONTRACT[half:]}]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": parts},
                {"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    raw = sdk(gateway).chat.completions.with_raw_response.create(
        model=vllm_server.model, messages=messages, max_tokens=ANSWER_LEN, extra_body=LONG)
    headers = catp_headers(raw)
    assert headers["x-catp-pruned"] == "true" and headers["x-catp-question-aware"] == "true"
    assert int(headers["x-catp-prompt-tokens-before"]) > vllm_server.max_model_len
    assert raw.parse().usage.prompt_tokens == int(headers["x-catp-prompt-tokens-after"])
    assert int(headers["x-catp-prompt-tokens-after"]) + ANSWER_LEN <= vllm_server.max_model_len


def test_completions_long_prompt_is_pruned(gateway, vllm_server):
    raw = sdk(gateway).completions.with_raw_response.create(
        model=vllm_server.model, prompt=CONTRACT, max_tokens=ANSWER_LEN, extra_body=LONG)
    headers = catp_headers(raw)
    assert headers["x-catp-pruned"] == "true"
    assert raw.parse().usage.prompt_tokens == int(headers["x-catp-prompt-tokens-after"])
    assert int(headers["x-catp-prompt-tokens-after"]) + ANSWER_LEN <= vllm_server.max_model_len


@pytest.fixture(scope="module")
def paced(vllm_server):
    p = RecordingProxy(vllm_server.root, pace=0.01)
    yield p
    p.close()


def test_streaming_passes_chunks_as_they_come(vllm_server, paced, tmp_path):
    """A buffering gateway sends the first chunk only once the upstream has sent the last. The upstream here is
    the real engine behind a proxy that relays its 400 tokens 10 ms apart (tests/_serve.py), so the check holds
    however fast or starved the engine is: the client's first chunk comes before the proxy relays the last."""
    gw = start_gateway(paced.root, "--workers", "1", "--domain", "legal", log_path=tmp_path / "gateway.log")
    try:
        late = first_chunk_after_last_relayed(gw.base, vllm_server.model, paced, long_chat())
    finally:
        assert gw.stop() == 0
    assert late < 0, f"the first chunk came {late:.2f} s after the upstream's last"


def test_the_streaming_check_catches_a_buffering_relay(vllm_server, paced):
    """The check above fails a relay that buffers: here a plain RecordingProxy, which reads the whole answer
    before it sends any of it (a short chat: nothing prunes on this path)."""
    buffering = RecordingProxy(paced.root)
    short = [{"role": "user", "content": "Tell me everything."}]
    try:
        assert first_chunk_after_last_relayed(buffering.root + "/v1", vllm_server.model, paced, short) > 0
    finally:
        buffering.close()


def first_chunk_after_last_relayed(base_url: str, model: str, paced: RecordingProxy, messages: list[dict],
                                   asked: int = 400) -> float:
    """Seconds from the paced upstream's last data line to the client's first content chunk (< 0: before)."""
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=300)
    paced.relayed_at.clear()
    stream = client.chat.completions.create(model=model, messages=messages, max_tokens=asked, stream=True,
                                            extra_body=LONG)
    pieces, first_at = [], None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            first_at = first_at or time.monotonic()
            pieces.append(chunk.choices[0].delta.content)
    assert len(pieces) > asked / 2 and len(paced.relayed_at) > asked
    return first_at - paced.relayed_at[-1]


def test_client_disconnect_cancels_the_upstream_request(long_gateway, long_server):
    """The client reads 20 data lines of a 32,668-token answer and goes: the engine stops far short of them
    (ignore_eos: only an abort ends it early). A gateway that does not cancel lets it generate them all."""
    asked = LONG_LEN - 100
    body = {"model": long_server.model, "messages": [{"role": "user", "content": "Tell me everything."}],
            "max_tokens": asked, "stream": True, **LONG}
    before = idle_count(long_server)
    with httpx.stream("POST", long_gateway.base + "/chat/completions", json=body, timeout=120) as resp:
        assert resp.status_code == 200
        lines = 0
        for line in resp.iter_lines():
            lines += line.startswith("data:")
            if lines == 20:
                break
        assert line != "data: [DONE]"
    total = idle_count(long_server) - before
    assert 10 <= total < asked / 2, f"{total:.0f} tokens generated"  # the first data line is the role's


def test_client_disconnect_cancels_a_non_streamed_request(long_gateway, long_server):
    """The client sends a plain (non-streamed) request for 32,668 tokens and hangs up after a set delay: the
    engine stops far short of them, and the gateway counts the request as client_disconnected. A try where the
    request had not reached the engine yet (0 tokens: a loaded machine) is made again with a longer delay."""
    asked = LONG_LEN - 100
    body = json.dumps({"model": long_server.model, "messages": [{"role": "user", "content": "Tell me everything."}],
                       "max_tokens": asked, **LONG}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{long_gateway.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    tries = []
    for delay in (0.5, 1.0, 2.0, 4.0):
        before = idle_count(long_server)
        with socket.create_connection(("127.0.0.1", long_gateway.port), timeout=30) as sock:
            sock.sendall(head + body)
            time.sleep(delay)
        tries.append(idle_count(long_server) - before)
        if tries[-1] > 0:
            break
    assert 0 < tries[-1] < asked / 2, f"tokens generated per try (delays 0.5-4 s): {tries}"
    metrics = httpx.get(long_gateway.root + "/metrics", timeout=10).text
    assert re.search(r'catp_serve_requests_total\{outcome="client_disconnected",route="chat"\} [1-9]', metrics)


def idle_count(vllm_server, timeout: float = 120) -> float:
    """vLLM's token count once its engine has generated nothing for 2 s (a long request runs 20-60 s here)."""
    last, deadline = probed_count(vllm_server), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(2)
        now = probed_count(vllm_server)
        if now == last:
            return now
        last = now
    pytest.fail(f"vLLM's engine was still generating after {timeout:.0f} s")


def probed_count(vllm_server) -> float:
    """vLLM's generated-token count, less its own probe. Its counters lag a loaded engine (the API server can be
    starved while the engine core runs), so the count is read once a 1-token request sent straight to vLLM has
    come back: its output went through the API server after every earlier step's. The probes' tokens are kept
    apart in PROBED."""
    reply = httpx.post(vllm_server + "/completions", timeout=120, json={
        "model": vllm_server.model, "prompt": "probe", "max_tokens": 1, **LONG})
    assert reply.status_code == 200, reply.text
    PROBED[vllm_server.root] = PROBED.get(vllm_server.root, 0) + 1
    return generated(vllm_server) - PROBED[vllm_server.root]


PROBED: dict[str, int] = {}


def test_extra_body_control(gateway, vllm_server):
    client = sdk(gateway)
    # mode off: no pruning, and vLLM's own 400 comes back with its body
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=vllm_server.model, messages=long_chat(), max_tokens=ANSWER_LEN,
                                       extra_body={"catp": {"mode": "off"}})
    assert "maximum context length" in info.value.body["message"]
    # a budget: the document is cut to it even though the engine would take more
    raw = client.chat.completions.with_raw_response.create(
        model=vllm_server.model, messages=long_chat(), max_tokens=ANSWER_LEN,
        extra_body={"catp": {"budget": 300, "domain": "legal", "question": "Who pays the fee?"}, **LONG})
    after = int(catp_headers(raw)["x-catp-prompt-tokens-after"])
    skeleton = [{**m, "content": ""} if m["content"] == CONTRACT else m for m in long_chat()]
    overhead = httpx.post(vllm_server.root + "/tokenize", timeout=30, json={
        "model": vllm_server.model, "messages": skeleton, "add_generation_prompt": True}).json()["count"]
    assert after <= 300 + overhead  # 300 for the document (same tokenizer), the rest: system, question, template
    # a ratio on a prompt that fits: pruned anyway
    short_doc = CONTRACT[:3000]
    raw = client.chat.completions.with_raw_response.create(
        model=vllm_server.model, messages=[{"role": "user", "content": short_doc}], max_tokens=ANSWER_LEN,
        extra_body={"catp": {"ratio": "1/4"}, **LONG})
    headers = catp_headers(raw)
    assert headers["x-catp-pruned"] == "true"
    assert int(headers["x-catp-prompt-tokens-after"]) < int(headers["x-catp-prompt-tokens-before"]) / 2


def test_fitting_request_is_forwarded_byte_for_byte_and_catp_key_stripped(proxied, proxy, vllm_server):
    odd = ('{ "messages" : [ {"content": "caf\\u00e9 \u4e2d\u6587  spaced", "role": "user"} ],\n'
           f'  "model": "{vllm_server.model}", "max_tokens": 3, "ignore_eos": true }}').encode()
    proxy.bodies.clear()
    resp = httpx.post(proxied.base + "/chat/completions", content=odd, timeout=120,
                      headers={"content-type": "application/json"})
    assert resp.status_code == 200 and resp.headers["x-catp-pruned"] == "false"
    assert proxy.bodies["/v1/chat/completions"] == [odd]
    with_key = json.loads(odd)
    with_key["catp"] = {"mode": "off"}
    resp = httpx.post(proxied.base + "/chat/completions", json=with_key, timeout=120)
    assert resp.status_code == 200
    sent = json.loads(proxy.bodies["/v1/chat/completions"][-1])
    assert "catp" not in sent and sent == json.loads(odd)


def test_upstream_400_for_length_is_pruned_again_once(proxied, proxy, vllm_server):
    """The proxy says max_model_len 4096; the real engine's limit is 2048 and it answers 400."""
    proxy.bodies.clear()
    proxy.statuses.clear()
    raw = sdk(proxied).chat.completions.with_raw_response.create(
        model=vllm_server.model, messages=long_chat(), max_tokens=ANSWER_LEN, extra_body=LONG)
    headers = catp_headers(raw)
    assert proxy.statuses["/v1/chat/completions"] == [400, 200]
    assert headers["x-catp-reprunes"] == "1" and headers["x-catp-pruned"] == "true"
    assert raw.parse().usage.prompt_tokens + ANSWER_LEN <= vllm_server.max_model_len
    first, second = (json.loads(b) for b in proxy.bodies["/v1/chat/completions"])
    for body in (first, second):
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}  # first, never pruned
        assert body["messages"][-1] == {"role": "user", "content": QUESTION}  # the question, never pruned
    assert len(second["messages"][1]["content"]) < len(first["messages"][1]["content"])


def test_full_queue_answers_429_and_health_stays_fast(proxied, vllm_server):
    """--workers 1 --queue 0: one pruning job at a time; the others get 429 with Retry-After at once."""
    async def main():
        client = openai.AsyncOpenAI(base_url=proxied.base, api_key="unused", max_retries=0, timeout=300)
        async def one(i):
            try:
                await client.chat.completions.create(model=vllm_server.model, messages=long_chat(f"Q{i}: fee?"),
                                                     max_tokens=2, extra_body=LONG)
                return 200, None
            except openai.APIStatusError as exc:
                return exc.status_code, exc
        async with httpx.AsyncClient(timeout=30) as h:
            jobs = [asyncio.create_task(one(i)) for i in range(4)]
            await asyncio.sleep(0.3)
            health = await h.get(proxied.root + "/health")
            results = await asyncio.gather(*jobs)
        return health, results

    health, results = asyncio.run(main())
    assert health.status_code == 200
    statuses = sorted(status for status, _ in results)
    assert statuses.count(200) >= 1 and statuses.count(429) >= 1 and set(statuses) <= {200, 429}
    exc = next(e for s, e in results if s == 429)
    assert exc.response.headers["retry-after"] == "1" and exc.body["code"] == "queue_full"


@pytest.mark.slow
def test_server_killed_mid_stream_then_down(vllm_server_factory, long_model, tmp_path):
    """A model that streams for 32,668 tokens, so that the engine is still at it when it is killed after the
    first chunk (stop 29's fresh-clone CI: with 1,900 tokens a loaded engine had finished before the kill)."""
    server = vllm_server_factory(long_model, max_model_len=LONG_LEN)
    gw = start_gateway(server.root, "--workers", "1", "--connect-timeout", "2", log_path=tmp_path / "gw.log")
    try:
        client = sdk(gw)
        stream = client.chat.completions.create(
            model=server.model, messages=[{"role": "user", "content": "Tell me everything."}],
            max_tokens=LONG_LEN - 100, stream=True, extra_body=LONG)
        seen = 0
        with pytest.raises(openai.APIError) as info:
            for chunk in stream:
                seen += 1
                if seen == 1:
                    os.killpg(server.process.pid, signal.SIGKILL)
        assert seen >= 1 and "upstream stream broke" in str(info.value)
        server.process.wait(timeout=30)
        started = time.monotonic()
        with pytest.raises(openai.APIStatusError) as down:
            client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": "hi"}])
        assert down.value.status_code == 502 and time.monotonic() - started < 10
        assert httpx.get(gw.root + "/health", timeout=5).status_code == 200
    finally:
        assert gw.stop() == 0
