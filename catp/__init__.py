"""catp — Context-Aware Token Pruning.

    from catp import prune
    result = prune(text, domain="legal", ratio="1/6")
    print(result.text)

- `prune(text, ...)`: one document; `Pruner(...)`: load rules, tokenizer and scorer once, prune many.
- `PruneResult`: the extract, the kept spans with their reasons, protected spans dropped, stats.
- `ask(document, question, server=...)`: prune to a vLLM server's budget and ask it (docs/backend.md).
- Errors: every one is a `catp.errors.CatpError` (InputError, BudgetError, RuleError, ...).
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["prune", "Pruner", "PruneResult", "ask", "__version__"]


def __getattr__(name: str):
    # Lazy: `import catp` stays cheap; heavy modules load on first use.
    if name in ("prune", "Pruner"):
        from catp import pipeline

        return getattr(pipeline, name)
    if name == "PruneResult":
        from catp.result import PruneResult

        return PruneResult
    if name == "ask":
        from catp.backends.ask import ask

        return ask
    raise AttributeError(f"module 'catp' has no attribute {name!r}")
