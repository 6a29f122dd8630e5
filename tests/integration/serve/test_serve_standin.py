"""`catp serve` in front of the fast stand-in upstream (benchmarks/standin_upstream.py: NOT a model, it answers at
once; it counts with Qwen's BPE and says max_model_len 4096), with a RecordingProxy (tests/_serve.py) between
them to see what the gateway forwarded. The client is the real openai SDK. No vLLM needed: these run in seconds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

from _serve import RecordingProxy, start_gateway
from conftest import free_port

ROOT = Path(__file__).resolve().parents[3]
CONTRACT = (ROOT / "examples" / "contract_en.txt").read_text()
REPORT = (ROOT / "examples" / "report_en.txt").read_text()
QUESTION = "What is the governing law of this agreement?"
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA"
                                                   "fFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
                                            "detail": "low"}}
MAX_MODEL_LEN = 4096


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    port = free_port()
    log = open(tmp_path_factory.mktemp("standin") / "standin.log", "wb")
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "standin_upstream.py"), "--port", str(port),
                             "--max-model-len", str(MAX_MODEL_LEN)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, "the stand-in upstream exited"
        try:
            if httpx.get(root + "/v1/models", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the stand-in upstream did not start"
        time.sleep(0.2)
    yield root
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def proxy(standin):
    p = RecordingProxy(standin)
    yield p
    p.close()


@pytest.fixture(scope="module")
def gateway(proxy, tmp_path_factory):
    gw = start_gateway(proxy.root, "--workers", "1", "--domain", "legal",
                       log_path=tmp_path_factory.mktemp("gw") / "gateway.log")
    yield gw
    assert gw.stop() == 0


def test_content_parts_text_is_pruned_in_place_and_other_parts_pass_untouched(gateway, proxy):
    """OpenAI's list content: each text part is pruned where it stands, the image part is passed on as it
    came, and a last user message made of one short text part is the question (not pruned)."""
    document = [{"type": "text", "text": CONTRACT}, IMAGE, {"type": "text", "text": REPORT}]
    question = [{"type": "text", "text": QUESTION}]
    messages = [{"role": "system", "content": "Answer from the documents."},
                {"role": "user", "content": document}, {"role": "user", "content": question}]
    proxy.bodies.clear()
    client = openai.OpenAI(base_url=gateway.base, api_key="unused", max_retries=0, timeout=120)
    raw = client.chat.completions.with_raw_response.create(model="standin", messages=messages, max_tokens=16)
    assert raw.parse().choices[0].message.content
    headers = raw.headers
    assert headers["x-catp-pruned"] == "true" and headers["x-catp-question-aware"] == "true"
    assert int(headers["x-catp-prompt-tokens-after"]) + 16 <= MAX_MODEL_LEN < int(
        headers["x-catp-prompt-tokens-before"])
    sent = json.loads(proxy.bodies["/v1/chat/completions"][-1])["messages"]
    assert sent[0] == messages[0] and sent[2] == messages[2]  # the system message and the question, untouched
    parts = sent[1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    assert parts[1] == IMAGE  # byte for byte in meaning: same keys, same data URL
    for pruned, original in ((parts[0]["text"], CONTRACT), (parts[2]["text"], REPORT)):
        assert 0 < len(pruned) < len(original) / 2
        assert ordered_extract(pruned, original)


def test_content_parts_that_fit_are_forwarded_as_received(gateway, proxy):
    messages = [{"role": "user", "content": [{"type": "text", "text": "Short note."}, IMAGE]},
                {"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    proxy.bodies.clear()
    client = openai.OpenAI(base_url=gateway.base, api_key="unused", max_retries=0, timeout=120)
    raw = client.chat.completions.with_raw_response.create(model="standin", messages=messages, max_tokens=16)
    assert raw.headers["x-catp-pruned"] == "false"
    assert json.loads(proxy.bodies["/v1/chat/completions"][-1])["messages"] == messages


def ordered_extract(pruned: str, original: str) -> bool:
    """Every piece of the pruned text (between gap markers and line ends) is found in the original, in order:
    catp deletes, it never rewrites."""
    at = 0
    for line in filter(None, (x.strip() for x in re.split(r" … |\n", pruned))):
        found = original.find(line, at)
        if found < 0:
            return False
        at = found + len(line)
    return True
