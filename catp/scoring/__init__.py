"""Scorers: how much each unit says, for what the rules leave open (the `Scorer` protocol in base.py).

lexical.py       the default: in-document term rarity, plus BM25-style overlap with a question (cheap)
lm.py            a causal LM's self-information (transformers; fastlm.py, logprobs.py: its fast paths)
remote.py        the same from a vLLM server's prompt log-probs
gguf.py          a .gguf checkpoint converted once to a cached safetensors folder
model_source.py, manifest.py   where a model folder comes from, and its sha256 manifest
registry.py      names to scorers (`--scorer lexical|lm|vllm|auto`)

May import catp.errors, catp.tokens, catp.document and catp.backends (remote.py); the engine imports this
package, never the other way round. torch and transformers are imported only when a model scorer is built.
"""
