"""`catp serve`: an OpenAI-compatible gateway in front of vLLM that prunes prompts too long for the engine.

Needs the `serve` extra (starlette, uvicorn, prometheus-client). `import catp` never loads this package.

- `app`      routes and the request flow (Starlette)
- `requests` parsing and validating OpenAI request bodies, the `catp` control key
- `upstream` the async httpx client to vLLM and the engine facts it caches
- `plan`     what to prune and to what budget (runs in the worker processes)
- `workers`  the process pool of loaded Pruners and its bounded queue
- `metrics`  Prometheus metrics
- `errors`   OpenAI-shaped error replies
- `server`   uvicorn startup, the ready line and signal handling
"""
