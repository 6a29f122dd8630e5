"""Backends: a vLLM server client, an in-process vllm.LLM engine, the engine budget, and `ask`.

May import the library (pipeline, tokens, errors); the CLI, the gateway (catp.serve) and the vLLM scorer
import it. httpx is its only network library."""

import logging

logging.getLogger("catp.backends").addHandler(logging.NullHandler())
