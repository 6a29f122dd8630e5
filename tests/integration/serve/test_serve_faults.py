"""`catp serve` without a model: the import boundary, hostile requests, an upstream that is down, and a clean
stop. The gateway runs as a real process (`python -m catp serve`); the client is the real openai SDK or raw
httpx where the SDK cannot send the bad request. No upstream is running: every request here is answered
before the gateway would need one, or is the 'upstream down' case itself."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import httpx
import openai
import pytest

from _serve import start_gateway
from conftest import free_port

KEY = "s3cret-key-for-tests"
MAX_BODY = 4096
SERVER_MODULES = ("catp.serve", "starlette", "uvicorn", "prometheus_client", "fastapi")


def test_import_catp_loads_no_server_code():
    code = ("import sys, catp, catp.cli; from catp import Pruner; "
            f"bad = sorted(m for m in sys.modules if m.startswith({SERVER_MODULES!r})); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """A gateway whose upstream port has nothing listening, with a key and a small body limit."""
    down = f"http://127.0.0.1:{free_port()}"
    gw = start_gateway(down, "--workers", "1", "--api-key-env", "CATP_TEST_GATEWAY_KEY", "--max-body",
                       str(MAX_BODY), "--connect-timeout", "2",
                       log_path=tmp_path_factory.mktemp("gw") / "gateway.log", env={"CATP_TEST_GATEWAY_KEY": KEY})
    yield gw
    gw.stop()


def sdk(gw, key=KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base, api_key=key, max_retries=0, timeout=30)


def assert_openai_error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    err = resp.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    return err


def post(gw, body: bytes | str, key: str | None = KEY, path: str = "/v1/chat/completions") -> httpx.Response:
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    return httpx.post(gw.root + path, content=body, headers=headers, timeout=30)


def test_missing_or_wrong_key_is_401(gateway):
    for key in ("wrong", KEY[:-1], KEY + "x"):
        with pytest.raises(openai.AuthenticationError) as info:
            sdk(gateway, key).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert info.value.status_code == 401 and info.value.body["code"] == "invalid_api_key"
    err = assert_openai_error(post(gateway, b"{}", key=None), 401)
    assert err["type"] == "authentication_error"
    assert KEY not in gateway.log()


def test_malformed_json_and_wrong_types_are_400(gateway):
    assert assert_openai_error(post(gateway, b'{"model": "m", "messages": ['), 400)["code"] == "invalid_json"
    assert_openai_error(post(gateway, b"[1, 2]"), 400)
    assert_openai_error(post(gateway, b"\xff\xfe garbage"), 400)
    cases = [({"messages": "hello"}, "messages"),
             ({"messages": []}, "messages"),
             ({"messages": [{"content": "no role"}]}, "messages.0.role"),
             ({"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
             ({"messages": [{"role": "user", "content": "a"}], "max_tokens": "9"}, "max_tokens"),
             ({"messages": [{"role": "user", "content": "a"}], "stream": "yes"}, "stream"),
             ({"messages": [{"role": "user", "content": "a"}], "catp": {"budget": "many"}}, "catp.budget"),
             ({"messages": [{"role": "user", "content": "a"}], "catp": {"ratio": "3/2"}}, "catp.ratio"),
             ({"messages": [{"role": "user", "content": "a"}], "catp": {"mode": "sometimes"}}, "catp.mode"),
             ({"messages": [{"role": "user", "content": "a"}], "catp": {"unknown": 1}}, "catp.unknown"),
             ({"messages": [{"role": "user", "content": "a"}], "catp": "off"}, "catp")]
    for body, param in cases:
        err = assert_openai_error(post(gateway, json.dumps({"model": "m", **body})), 400)
        assert err["param"].startswith(param), (body, err)
    err = assert_openai_error(post(gateway, json.dumps({"model": "m", "prompt": {"a": 1}}), path="/v1/completions"),
                              400)
    assert err["param"].startswith("prompt")


def test_body_over_max_body_is_413(gateway):
    big = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * MAX_BODY}]})
    assert_openai_error(post(gateway, big), 413)

    def chunked():  # no content-length: the limit holds while reading
        yield big[:100].encode()
        yield big[100:].encode()

    resp = httpx.post(gateway.root + "/v1/chat/completions", content=chunked(),
                      headers={"authorization": f"Bearer {KEY}"}, timeout=30)
    assert_openai_error(resp, 413)
    with pytest.raises(openai.APIStatusError) as info:
        sdk(gateway).chat.completions.create(model="m", messages=[{"role": "user", "content": "y" * MAX_BODY}])
    assert info.value.status_code == 413


def test_upstream_down_is_502_within_the_connect_timeout(gateway):
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as info:
        sdk(gateway).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 502 and info.value.body["code"] == "upstream_unreachable"
    with pytest.raises(openai.APIStatusError) as info:
        sdk(gateway).models.list()
    assert info.value.status_code == 502
    assert time.monotonic() - started < 10
    assert httpx.get(gateway.root + "/health", timeout=5).json() == {"status": "ok"}


def test_unknown_route_and_method_have_the_openai_shape(gateway):
    assert_openai_error(httpx.get(gateway.root + "/v1/nothing", timeout=10), 404)
    assert_openai_error(httpx.get(gateway.root + "/v1/chat/completions", timeout=10), 405)


def test_metrics_count_requests_by_route_and_outcome(gateway):
    post(gateway, b"{bad")
    text = httpx.get(gateway.root + "/metrics", timeout=10).text
    assert 'catp_serve_requests_total{outcome="400",route="chat"}' in text
    for name in ("catp_serve_prune_seconds", "catp_serve_prompt_tokens_before_total",
                 "catp_serve_dropped_protected_spans_total", "catp_serve_upstream_seconds",
                 "catp_serve_requests_in_flight", "catp_serve_prune_queue_depth"):
        assert name in text


def test_sigterm_stops_cleanly_and_logs_no_request_text(tmp_path):
    gw = start_gateway(f"http://127.0.0.1:{free_port()}", "--workers", "1", log_path=tmp_path / "gw.log")
    secret = "ConfidentialClauseText-93817"
    httpx.post(gw.root + "/v1/chat/completions", timeout=30,
               json={"model": "m", "messages": [{"role": "user", "content": secret}], "max_tokens": "x"})
    assert gw.stop(signal.SIGTERM) == 0
    log = gw.log()
    assert log.count("catp serve: ready on http://127.0.0.1:") == 1
    assert secret not in log and "Traceback" not in log


def test_bad_settings_are_one_line_errors(tmp_path):
    def catp(*args, env=None):
        return subprocess.run([sys.executable, "-m", "catp", "serve", *args], capture_output=True, text=True,
                              timeout=120, env=env)

    out = catp("--upstream", "ftp://x")
    assert out.returncode == 2 and out.stderr.startswith("catp: error:") and "http://" in out.stderr
    out = catp("--upstream", "http://127.0.0.1:1", "--api-key-env", "CATP_NO_SUCH_VARIABLE_SET")
    assert out.returncode == 2 and "CATP_NO_SUCH_VARIABLE_SET" in out.stderr
    out = catp("--upstream", "http://127.0.0.1:1", "--domain", "astrology")
    assert out.returncode == 2 and "astrology" in out.stderr and "Traceback" not in out.stderr
