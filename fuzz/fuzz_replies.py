"""Coverage-guided fuzzing of server replies (atheris / libFuzzer).

Each input is one reply of a vLLM server (a status, headers, a body or an SSE stream: raw fuzzed bytes, or
JSON built from fuzzed choices around the shapes vLLM sends, nested deep at times), given to one of the
client's calls: /v1/models, /tokenize, /metrics, chat and completions, plain or streamed. A `CatpError`
(a one-line BackendError) is an expected outcome; any other exception is a crash.

The replies come from an httpx.MockTransport (a stand-in: a real server cannot send arbitrary bytes on cue,
and a socket per input would leave a few executions a second); the client's reading, bounding and parsing
code is the real one.

    PYTHONPATH=. python fuzz/fuzz_replies.py -atheris_runs=100000 -max_len=1024 -artifact_prefix=/tmp/fz/ /tmp/fz/replies
"""

from __future__ import annotations

import json
import sys

import atheris
import httpx

with atheris.instrument_imports(include=["catp"]):
    from catp.backends.client import VLLMClient
    from catp.errors import CatpError

STATUSES = [200, 200, 200, 200, 400, 404, 429, 500, 503]
CALLS = ["models", "tokenize", "metrics", "chat", "chat_stream", "complete", "complete_stream", "post_json"]
KEYS = ["data", "id", "max_model_len", "root", "choices", "message", "content", "delta", "text", "finish_reason",
        "usage", "prompt_tokens", "completion_tokens", "count", "tokens", "model", "error", "object", "index"]
MESSAGES = [{"role": "user", "content": "hi"}]


def value(fdp, depth: int = 0):
    op = fdp.ConsumeIntInRange(0, 9 if depth < 6 else 5)
    if op == 0:
        return None
    if op == 1:
        return fdp.ConsumeBool()
    if op == 2:
        return fdp.ConsumeIntInRange(-(2 ** 40), 2 ** 40)
    if op == 3:
        return fdp.ConsumeRegularFloat()
    if op in (4, 5):
        return fdp.ConsumeUnicode(12)
    if op == 6:  # a deep list
        return _Deep(fdp.ConsumeIntInRange(1, 100_000))
    if op == 7:
        return [value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    return {KEYS[fdp.ConsumeIntInRange(0, len(KEYS) - 1)]: value(fdp, depth + 1)
            for _ in range(fdp.ConsumeIntInRange(0, 4))}


class _Deep:  # "[[[...]]]" as raw JSON text, not a Python object (json.dumps would recurse)
    def __init__(self, n: int) -> None:
        self.n = n


def dumps(obj) -> str:
    if isinstance(obj, _Deep):
        return "[" * obj.n + "]" * obj.n
    if isinstance(obj, list):
        return "[" + ",".join(dumps(x) for x in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ",".join(json.dumps(k) + ":" + dumps(v) for k, v in obj.items()) + "}"
    return json.dumps(obj, allow_nan=True)


def body(fdp, stream: bool) -> bytes:
    mode = fdp.ConsumeIntInRange(0, 3)
    if mode == 0:
        return fdp.ConsumeBytes(fdp.remaining_bytes())
    if not stream:
        return dumps(value(fdp)).encode("utf-8", "surrogatepass")
    lines = []
    for _ in range(fdp.ConsumeIntInRange(0, 8)):
        op = fdp.ConsumeIntInRange(0, 5)
        if op == 0:
            lines.append(": keep-alive")
        elif op == 1:
            lines.append("data: [DONE]")
        elif op == 2:
            lines.append("data: " + fdp.ConsumeUnicode(16))
        else:
            lines.append("data: " + dumps(value(fdp)))
    sep = ["\n\n", "\r\n\r\n", "\n", "\r"][fdp.ConsumeIntInRange(0, 3)]
    return sep.join(lines).encode("utf-8", "surrogatepass") + (b"\n\n" if fdp.ConsumeBool() else b"")


REPLY: list = []  # the next reply: status, headers, body


def _handler(request: httpx.Request) -> httpx.Response:
    status, headers, payload = REPLY
    return httpx.Response(status, headers=headers, content=payload)


CLIENT = VLLMClient("http://127.0.0.1:9/v1", model="m", retries=0, timeout=5.0)  # one client: httpx's is slow to build
CLIENT._http = httpx.Client(transport=httpx.MockTransport(_handler), timeout=CLIENT._http.timeout)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    call = CALLS[fdp.ConsumeIntInRange(0, len(CALLS) - 1)]
    status = STATUSES[fdp.ConsumeIntInRange(0, len(STATUSES) - 1)]
    content_type = ["application/json", "text/event-stream", "text/plain; charset=latin-1", ""][
        fdp.ConsumeIntInRange(0, 3)]
    retry_after = fdp.ConsumeUnicode(6) if fdp.ConsumeIntInRange(0, 4) == 0 else None
    payload = body(fdp, stream=call.endswith("_stream"))

    headers = {"content-type": content_type} if content_type else {}
    if retry_after is not None and retry_after.isprintable() and retry_after.isascii():
        headers["retry-after"] = retry_after
    REPLY[:] = [status, headers, payload]
    client = CLIENT
    try:
        if call == "models":
            client.list_models()
        elif call == "tokenize":
            client.count_chat_tokens(MESSAGES)
        elif call == "metrics":
            client.kv_cache()
        elif call == "chat":
            client.chat(MESSAGES, max_tokens=8)
        elif call == "chat_stream":
            client.chat(MESSAGES, max_tokens=8, on_delta=lambda d: None)
        elif call == "complete":
            client.complete("hi", max_tokens=8)
        elif call == "complete_stream":
            client.complete("hi", max_tokens=8, on_delta=lambda d: None)
        else:
            client.post_json("/completions", {"prompt": "hi"})
    except CatpError as exc:
        assert "\n" not in str(exc), "a multi-line error"


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
