"""A fast stand-in for a vLLM server, for measuring the gateway's own overhead (benchmarks/bench_gateway.py).

NOT a model: it answers every chat or completion at once with a fixed short text. What it does like vLLM:
`GET /v1/models` (max_model_len), `POST /tokenize` (counts with Qwen's BPE, chat messages as content + 4
tokens each + 3, a content list by its text parts), `GET /metrics` (vllm:cache_config_info), the
400-for-length reply with vLLM's wording, and SSE streams ending in `data: [DONE]`.
Run: python benchmarks/standin_upstream.py --port 8199
"""

from __future__ import annotations

import argparse
import json
import time

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route

MODEL = "standin"
ANSWER = "The answer is in section 4."


def create_app(max_model_len: int = 32768, num_blocks: int = 4096, block_size: int = 16) -> Starlette:
    from catp.tokens import load_token_counter

    counter = load_token_counter(None)

    def text(content) -> str:  # a string, or OpenAI's list of parts (only the text parts are counted)
        if isinstance(content, list):
            return "\n".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
        return content or ""

    def count(body: dict) -> int:
        if "messages" in body:
            return sum(counter.count(text(m.get("content"))) + 4 for m in body["messages"]) + 3
        return counter.count(body.get("prompt") or "")

    async def models(request: Request):
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model", "root": MODEL,
                                                         "max_model_len": max_model_len}]})

    async def tokenize(request: Request):
        body = await request.json()
        n = await run_in_threadpool(count, body)
        return JSONResponse({"count": n, "max_model_len": max_model_len, "tokens": []})

    async def metrics(request: Request):
        return PlainTextResponse(f'vllm:cache_config_info{{block_size="{block_size}",num_gpu_blocks='
                                 f'"{num_blocks}"}} 1.0\n')

    async def generate(request: Request):
        body = await request.json()
        chat = "messages" in body
        prompt = await run_in_threadpool(count, body)
        max_tokens = body.get("max_tokens") or 16
        if prompt + max_tokens > max_model_len:
            msg = (f"This model's maximum context length is {max_model_len} tokens. However, you requested "
                   f"{prompt + max_tokens} tokens ({prompt} in the messages, {max_tokens} in the completion).")
            return JSONResponse({"error": {"message": msg, "type": "BadRequestError", "param": None,
                                           "code": 400}}, status_code=400)
        created = int(time.time())
        usage = {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}
        if body.get("stream"):
            async def events():
                for word in ANSWER.split(" "):
                    delta = {"content": word + " "} if chat else None
                    choice = {"index": 0, "delta": delta, "finish_reason": None} if chat else \
                        {"index": 0, "text": word + " ", "finish_reason": None}
                    yield f"data: {json.dumps({'id': 'x', 'object': 'chunk', 'created': created, 'model': MODEL, 'choices': [choice]})}\n\n"
                yield "data: [DONE]\n\n"
            return StreamingResponse(events(), media_type="text/event-stream")
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": ANSWER, "finish_reason": "stop"}
            obj = "text_completion"
        return JSONResponse({"id": "x", "object": obj, "created": created, "model": MODEL, "choices": [choice],
                             "usage": usage})

    return Starlette(routes=[Route("/v1/models", models), Route("/tokenize", tokenize, methods=["POST"]),
                             Route("/metrics", metrics), Route("/v1/chat/completions", generate, methods=["POST"]),
                             Route("/v1/completions", generate, methods=["POST"])])


def main() -> None:
    import uvicorn

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8199)
    ap.add_argument("--max-model-len", type=int, default=32768)
    args = ap.parse_args()
    uvicorn.run(create_app(args.max_model_len), host="127.0.0.1", port=args.port, log_level="warning",
                access_log=False)


if __name__ == "__main__":
    main()
