"""Hostile or broken servers (issue 25 point 4): a stream kept alive forever, a body that drips, endless bodies
and streams, JSON nested too deeply. Each ends in a one-line BackendError within the total timeout, with memory
bounded.

STAND-IN: the misbehaving server of tests/integration/backends/test_backend_faults.py (stdlib http.server on 127.0.0.1), since a real vLLM
server cannot be made to misbehave on cue."""

from __future__ import annotations

import time

import pytest

from catp.backends import client as client_module
from _standin import MESSAGES, StandIn, client_for, raises_backend_error, reply, sse_chunk, stream

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def standin():
    with StandIn() as server:
        yield server


def _chunked(h, pieces, pause: float = 0.0, content_type: str = "text/event-stream") -> None:
    """Send `pieces` (an iterable of bytes) as a chunked body, pausing between them, until the test ends."""
    h.send_response(200)
    h.send_header("content-type", content_type)
    h.send_header("transfer-encoding", "chunked")
    h.end_headers()
    try:
        for piece in pieces:
            if h.server.standin.release.is_set():
                return
            h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            h.wfile.flush()
            if pause:
                time.sleep(pause)
    except OSError:
        return  # the client went away: what it should do


def _forever(first: list[bytes], then: bytes):
    yield from first
    while True:
        yield then


def test_a_stream_kept_alive_forever_ends_at_the_total_timeout(standin):
    one = (sse_chunk("Hello") + "\n\n").encode()
    standin.script = [lambda h: _chunked(h, _forever([one], b": keep-alive\n\n"), pause=0.2)]
    client = client_for(standin.url, timeout=2.0)
    started = time.monotonic()
    err = raises_backend_error(lambda: client.chat(MESSAGES, max_tokens=8, on_delta=lambda d: None))
    assert "total timeout of 2s" in str(err) and time.monotonic() - started < 6


def test_a_body_that_drips_ends_at_the_total_timeout(standin):
    standin.script = [lambda h: _chunked(h, _forever([], b" "), pause=0.2, content_type="application/json")]
    client = client_for(standin.url, timeout=2.0)
    err = raises_backend_error(client.list_models)
    assert "total timeout" in str(err)


def test_an_endless_body_is_cut_at_max_body_bytes(standin, monkeypatch):
    monkeypatch.setattr(client_module, "MAX_BODY_BYTES", 1 << 20)
    standin.script = [lambda h: _chunked(h, _forever([b'{"data": ["'], b"x" * 65536), content_type="application/json")]
    err = raises_backend_error(client_for(standin.url).list_models)
    assert "over 1,048,576 bytes" in str(err)


def test_an_endless_error_body_is_cut_too(standin, monkeypatch):
    monkeypatch.setattr(client_module, "MAX_BODY_BYTES", 1 << 20)

    def endless_400(h):
        h.send_response(400)
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()
        for piece in _forever([], b"y" * 65536):
            try:
                h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            except OSError:
                return

    standin.script = [endless_400]
    assert "over 1,048,576 bytes" in str(raises_backend_error(client_for(standin.url).list_models))


def test_an_endless_answer_stream_stops_past_max_tokens(standin):
    piece = (sse_chunk("word ") + "\n\n").encode()
    standin.script = [lambda h: _chunked(h, _forever([], piece))]
    got: list[str] = []
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=20, on_delta=got.append))
    assert "more than max_tokens (20)" in str(err) and len(got) <= 20 + client_module.STREAM_SLACK_TOKENS


def test_an_endless_stream_line_is_cut(standin, monkeypatch):
    monkeypatch.setattr(client_module, "MAX_LINE_BYTES", 1 << 20)
    standin.script = [lambda h: _chunked(h, _forever([b"data: {"], b"z" * 65536))]
    err = raises_backend_error(lambda: client_for(standin.url).chat(MESSAGES, max_tokens=8, on_delta=lambda d: None))
    assert "stream line over 1,048,576 bytes" in str(err)


@pytest.mark.parametrize("where", ["reply", "stream chunk", "error reply"])
def test_json_nested_too_deeply_is_a_backend_error(standin, where):
    if where == "reply":
        standin.script = [reply(200, DEEP)]
        call = client_for(standin.url).list_models
    elif where == "stream chunk":
        standin.script = [stream(["data: " + DEEP])]
        call = lambda: client_for(standin.url).chat(MESSAGES, max_tokens=8, on_delta=lambda d: None)  # noqa: E731
    else:
        standin.script = [reply(400, DEEP)]
        call = client_for(standin.url).list_models
    raises_backend_error(call)


def test_cli_timeout_option_is_checked(tmp_path):
    import subprocess
    import sys

    doc = tmp_path / "d.txt"
    doc.write_text("The fee is $5.\n")
    run = subprocess.run([sys.executable, "-m", "catp", "ask", str(doc), "fee?", "--timeout", "0",
                          "--server", "http://127.0.0.1:9"], capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "--timeout must be more than 0" in run.stderr


@pytest.mark.parametrize("body", ['"\\n"', '{"error": {"message": "bad\\r\\nthing\\u2028x"}}', "line one\nline two"])
def test_a_server_message_with_line_breaks_is_one_line(standin, body):
    """Found by fuzz/fuzz_replies.py: a 500 whose JSON body is the string "\\n" gave a two-line error."""
    standin.script = [reply(500, body)] * 3
    raises_backend_error(client_for(standin.url).list_models)
