"""Backends: a vLLM server client, an in-process vllm.LLM engine, the engine budget, and `ask`."""

import logging

logging.getLogger("catp.backends").addHandler(logging.NullHandler())
