"""`catp serve`: an OpenAI-compatible gateway in front of vLLM that prunes prompts too long for the engine.

Needs the `serve` extra (starlette, uvicorn, prometheus-client, orjson). `import catp` never loads this package;
only `catp.commands.serve` imports it, inside the command. It imports the library (catp.pipeline, catp.backends),
never the reverse. The event loop (app, upstream, requests) only parses, forwards and relays: anything that takes
CPU time runs in the worker processes (workers, plan). docs/gateway.md is the user's reference.

- `app`      routes and the request flow (Starlette)
- `requests` parsing and validating OpenAI request bodies, the `catp` control key
- `jsonio`   fast JSON in and out of the event loop (orjson, the standard library as fallback)
- `upstream` the async httpx client to vLLM and the engine facts it caches
- `plan`     what to prune and to what budget (runs in the worker processes)
- `workers`  the process pool of loaded Pruners and its bounded queue
- `metrics`  Prometheus metrics
- `errors`   OpenAI-shaped error replies
- `server`   uvicorn startup, the ready line and signal handling
"""
