"""Backend faults: HTTP 500/429, garbage or truncated JSON, broken and stalled streams,
a server that is down or never answers -> a bounded retry or a one-line BackendError, never a hang.

STAND-IN: these use a tiny real HTTP server (stdlib http.server on 127.0.0.1, in a thread)
that misbehaves on cue, because a real vLLM server cannot be made to send garbage JSON,
HTTP 500/429 or a stalled stream on demand. The real-server faults (killed and stopped
mid-stream) are in tests/integration/backends/test_backend_kill.py.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys

import pytest
from _standin import (HANG_GUARD_S, MESSAGES, Action, StandIn, bounded, chat_ok, client_for, closed_port, drop, raises_backend_error,
                      reply, sse_chunk, stall, stream)

from catp.backends.client import ContextLengthError


@pytest.fixture
def standin():
    with StandIn() as server:
        yield server



# -- retries ---------------------------------------------------------------------------------

def test_http_500_is_retried_then_succeeds(standin):
    standin.script = [reply(500, {"error": {"message": "boom"}}), reply(503, "busy"), chat_ok("fine")]
    gen = bounded(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4))
    assert gen.text == "fine"
    assert len(standin.requests) == 3


def test_http_500_gives_up_after_bounded_retries_naming_url_and_status(standin):
    standin.script = [reply(500, {"error": {"message": "engine dead"}})] * 3
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4))
    assert f"{standin.url}/chat/completions" in str(err)
    assert "HTTP 500" in str(err) and "engine dead" in str(err)
    assert "gave up after 3 attempts" in str(err)
    assert len(standin.requests) == 3
    assert err.exit_code == 3


def test_http_429_honours_retry_after_within_the_cap(standin, caplog):
    standin.script = [reply(429, {"error": {"message": "slow down"}}, {"retry-after": "3600"}), chat_ok()]
    with caplog.at_level(logging.WARNING, logger="catp.backends.client"):
        gen = bounded(lambda: client_for(standin.url, max_backoff_s=0.2).chat(MESSAGES, max_tokens=4))
    assert gen.text == "ok"
    assert "HTTP 429" in caplog.text and "retry 1/2 in 0.2s" in caplog.text  # 3600 s capped at 0.2 s


def test_http_429_retry_after_is_used_when_small(standin, caplog):
    standin.script = [reply(429, "", {"retry-after": "0.1"}), chat_ok()]
    with caplog.at_level(logging.WARNING, logger="catp.backends.client"):
        bounded(lambda: client_for(standin.url, max_backoff_s=5).chat(MESSAGES, max_tokens=4))
    assert "retry 1/2 in 0.1s" in caplog.text


def test_client_errors_are_not_retried(standin):
    standin.script = [reply(404, {"detail": "Not Found"})]
    err = raises_backend_error(lambda: client_for(standin.url).count_chat_tokens(MESSAGES))
    assert "HTTP 404" in str(err) and standin.url.removesuffix("/v1") + "/tokenize" in str(err)
    assert len(standin.requests) == 1


def test_connection_dropped_without_response_is_retried(standin):
    standin.script = [drop(), chat_ok("after drop")]
    assert bounded(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4)).text == "after drop"


def test_context_length_400_is_recognised(standin):
    message = ("This model's maximum context length is 2048 tokens. However, your prompt contains at least "
               "2049 input tokens, which exceeds this limit even without any output tokens.")
    standin.script = [reply(400, {"error": {"message": message, "type": "BadRequestError", "code": 400}})]
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4))
    assert isinstance(err, ContextLengthError)
    assert (err.limit, err.prompt_tokens) == (2048, 2049)
    assert len(standin.requests) == 1  # a 400 is not retried


def test_max_tokens_400_is_not_a_context_length_error(standin):
    message = "max_tokens=3000 cannot be greater than max_model_len=2048. Please request fewer output tokens."
    standin.script = [reply(400, {"error": {"message": message, "param": "max_tokens", "code": 400}})]
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=3000))
    assert not isinstance(err, ContextLengthError)


# -- bad bodies ------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b'{"choices": [{"message": {"cont',
                                  b"\xff\xfe\x00garbage"])
def test_garbage_or_truncated_json_is_a_clear_error(standin, body):
    standin.script = [reply(200, body)]
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4))
    assert "not valid JSON" in str(err) and f"{standin.url}/chat/completions" in str(err)


def test_json_of_the_wrong_shape_is_a_clear_error(standin):
    standin.script = [reply(200, {"choices": []}), reply(200, {"data": "nope"})]
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4))
    assert "unexpected reply" in str(err) and "choices" in str(err)
    err = raises_backend_error(lambda: client_for(standin.url).list_models())
    assert "unexpected reply" in str(err)


# -- streams ---------------------------------------------------------------------------------

def test_stream_assembles_deltas(standin):
    standin.script = [stream([sse_chunk("Hel"), ": keep-alive comment", sse_chunk("lo", "stop")])]
    seen: list[str] = []
    gen = bounded(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4, on_delta=seen.append))
    assert seen == ["Hel", "lo"] and gen.text == "Hello" and gen.finish_reason == "stop" and gen.streamed
    assert standin.requests[0]["body"]["stream"] is True


def test_stream_with_garbage_chunk(standin):
    standin.script = [stream([sse_chunk("a"), "data: {not json"])]
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4, on_delta=print))
    assert "stream chunk 1 is not valid JSON" in str(err)


def test_stream_error_event(standin):
    standin.script = [stream([sse_chunk("a"), 'data: {"error": {"message": "engine crashed", "code": 500}}'])]
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4, on_delta=print))
    assert "engine crashed" in str(err)


def test_stream_that_ends_without_done_is_truncated(standin):
    standin.script = [stream([sse_chunk("a"), sse_chunk("b")], done=False)]
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4, on_delta=print))
    assert "without [DONE]" in str(err) and "after 2 chunks" in str(err)


def test_stream_cut_mid_body(standin):
    standin.script = [stream([sse_chunk("a")], done=False, cut=True)]
    seen: list[str] = []
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4, on_delta=seen.append))
    assert "connection broke mid-stream after 1 chunks" in str(err)
    assert seen == ["a"]


def test_stream_that_stalls_hits_the_read_timeout(standin):
    standin.script = [stream([sse_chunk("a"), sse_chunk("b")], stall_after=1)]
    seen: list[str] = []
    err = raises_backend_error(lambda: client_for(standin.url, read_timeout=0.5)
                               .chat(MESSAGES, max_tokens=4, on_delta=seen.append))
    assert "no data for 0.5s after 1 stream chunks (read timeout)" in str(err)
    assert seen == ["a"]


def test_stream_status_error_before_first_byte_is_retried(standin):
    standin.script = [reply(503, "warming up"), stream([sse_chunk("x", "stop")])]
    assert bounded(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=4, on_delta=lambda s: None)).text == "x"


# -- no server, or a silent one --------------------------------------------------------------

def test_server_that_never_answers_hits_the_read_timeout(standin):
    standin.script = [stall()]
    err = raises_backend_error(lambda: client_for(standin.url, read_timeout=0.5).chat(MESSAGES, max_tokens=4))
    assert "no response within 0.5s (read timeout)" in str(err)
    assert len(standin.requests) == 1  # a read timeout is not retried: it could repeat a long generation


def test_server_down_is_a_clear_error_after_bounded_retries():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    err = raises_backend_error(lambda: client_for(url).list_models())
    assert f"GET {url}/models: cannot reach the server" in str(err)
    assert "gave up after 3 attempts" in str(err)


def test_connect_timeout_is_bounded_and_retried():
    # A real socket whose accept queue is full: the kernel drops further SYNs, so connecting times out.
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        filler.connect(("127.0.0.1", port))  # takes the only slot; nobody ever accepts
        url = f"http://127.0.0.1:{port}/v1"
        err = raises_backend_error(lambda: client_for(url, connect_timeout=0.3, retries=1).list_models())
    assert "cannot reach the server (ConnectTimeout" in str(err) and "gave up after 2 attempts" in str(err)


def test_cli_server_down_exits_3_with_one_line(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text("The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.\n")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    proc = subprocess.run([sys.executable, "-m", "catp.cli", "ask", str(doc), "What fee?", "--server", url,
                           "--retries", "1"], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 3
    errors = [line for line in proc.stderr.splitlines() if line.startswith("catp: error:")]
    assert len(errors) == 1 and url in errors[0] and "cannot reach the server" in errors[0]
    assert "Traceback" not in proc.stderr


def test_cli_http_500_exits_3_naming_the_status(standin, tmp_path):
    standin.script = [reply(500, {"error": {"message": "internal"}})] * 2
    proc = subprocess.run([sys.executable, "-m", "catp.cli", "budget", "--server", standin.url, "--retries", "1"],
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 3
    assert f"catp: error: GET {standin.url}/models: HTTP 500" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_bad_server_url_is_a_usage_error():
    proc = subprocess.run([sys.executable, "-m", "catp.cli", "budget", "--server", "localhost:8000"],
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("catp: error: server URL must start with http://")


# -- API key ---------------------------------------------------------------------------------

def test_api_key_comes_from_env_or_argument(standin, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("CATP_API_KEY", "from-env")
    standin.script = [chat_ok(), chat_ok(), chat_ok()]
    client_for(standin.url).chat(MESSAGES, max_tokens=1)
    client_for(standin.url, api_key="from-flag").chat(MESSAGES, max_tokens=1)
    monkeypatch.delenv("CATP_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-env")
    client_for(standin.url).chat(MESSAGES, max_tokens=1)
    auth = [r["headers"].get("Authorization") for r in standin.requests]
    assert auth == ["Bearer from-env", "Bearer from-flag", "Bearer openai-env"]


# -- a server without vLLM's extra endpoints -------------------------------------------------------

def models_reply(root: str) -> Action:
    return reply(200, {"object": "list", "data": [{"id": "stand-in", "root": root, "max_model_len": 2048}]})


def test_budget_counts_with_the_local_tokenizer_when_tokenize_is_missing(standin, tiny_model_dir):
    from tokenizers import Tokenizer

    from catp.backends.budget import ChatCounter, engine_budget

    standin.script = [models_reply(str(tiny_model_dir)), reply(404, "no /metrics"), reply(404, "no /tokenize")]
    client = client_for(standin.url)
    counter = ChatCounter(client)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "付款期限是哪天？ Fee: $5,000"}]
    figures = engine_budget(client, counter, messages, max_tokens=100)
    # the tiny model's chat template, written out, encoded with its tokenizer.json
    rendered = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    expected = len(Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
                   .encode(rendered + "<|im_start|>assistant\n", add_special_tokens=False).ids)
    assert figures.prompt_overhead.value == expected
    assert counter.exact and figures.counter.startswith(f"local tokenizer {tiny_model_dir}")
    assert any("HTTP 404" in w and "/metrics" in w for w in figures.warnings)
    assert any("/tokenize" in w and "counting with local tokenizer" in w for w in figures.warnings)
    assert figures.kv_cache_tokens is None and figures.prompt_limit.value == 2048 - 100


def test_budget_estimate_says_it_is_one(standin, tmp_path):
    from catp.backends.budget import ChatCounter, engine_budget

    standin.script = [models_reply(str(tmp_path / "elsewhere")), reply(404, "no /tokenize")]
    client = client_for(standin.url)
    counter = ChatCounter(client)
    figures = engine_budget(client, counter, [{"role": "user", "content": "Question?"}], max_tokens=10,
                            use_metrics=False)
    assert not counter.exact and figures.counter.startswith("estimate:")
    assert any("counting with an estimate" in w for w in figures.warnings)
    assert figures.prompt_overhead.value > 8
