"""What to prune and to what budget. Runs in the worker processes (catp.serve.workers), never on the event loop.

A chat request: system messages are never pruned and go first; when the last user message is short it is the
question (never pruned, passed as `question=`); the other user and tool contents are the documents: a
string content, or each text part of a content list (OpenAI's `[{"type": "text", ...}, {"type": "image_url",
...}]`), pruned in place, with the other parts passed on untouched. Their share of the engine's budget (catp.backends.budget.engine_budget: max_model_len, KV share at
--concurrency, max_tokens, this request's own template and messages counted with /tokenize) is split so that
the longest are pruned first; the prompt is counted again exactly and pruned tighter until it fits.
"""

from __future__ import annotations

import time
from typing import Any

from catp.backends.client import VLLMClient
from catp.errors import BackendError, CatpError

QUESTION_MAX_TOKENS = 256  # a last user message up to this long is a question
FIT_ROUNDS = 3
CLIENT_TTL_S = 60.0
PRUNABLE_ROLES = ("user", "tool")
WORKER_NICE = 5

_settings: dict[str, Any] = {}
_pruners: dict[str | None, Any] = {}
_clients: dict[str | None, tuple[Any, float]] = {}


def init_worker(settings: dict[str, Any]) -> None:
    """Process pool initializer: keep the settings, load the default Pruner once."""
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the pool; Ctrl-C must not kill jobs mid-way
    try:
        os.nice(WORKER_NICE)  # pruning yields the CPU to the event loop: /health is never late because of it
    except OSError:
        pass
    _settings.clear()
    _settings.update(settings)
    try:
        _pruner(None)
    except CatpError:
        pass  # reported per request


def ping() -> int:
    import os

    return os.getpid()


def _client(model: str | None):
    cached = _clients.get(model)
    if cached and time.monotonic() - cached[1] < CLIENT_TTL_S:
        return cached[0]
    if cached:
        cached[0].close()
    client = _CachingClient(_settings["upstream"], model=model, api_key=_settings.get("api_key"),
                            connect_timeout=_settings["connect_timeout"], read_timeout=_settings["read_timeout"],
                            retries=1)
    _clients[model] = (client, time.monotonic())
    return client


class _CachingClient(VLLMClient):
    """Reads the KV-cache size once (the client itself is renewed every CLIENT_TTL_S), and counts chat messages
    exactly as the gateway forwards them."""

    _kv: Any = ...

    def kv_cache(self):
        if self._kv is ...:
            self._kv = super().kv_cache()
        return self._kv

    def count_chat_tokens(self, messages) -> int:
        """VLLMClient's count, without its normalizing (string contents only, system messages joined): the
        gateway sends the client's messages as they are, content lists and extra fields included."""
        from catp.backends.schemas import TokenizeReply

        body = {"model": self.model, "messages": list(messages), "add_generation_prompt": True}
        return self._post_model(self.root_url + "/tokenize", body, TokenizeReply).count


def _pruner(tokenizer: str | None):
    """This worker's Pruner for the upstream's tokenizer: one for every domain (a request's domain is given per
    call), so rules and taggers load once."""
    from catp.pipeline import Pruner

    if tokenizer not in _pruners:
        _pruners[tokenizer] = Pruner(domain=_settings.get("domain"), rules=_settings.get("rules") or (),
                                     tokenizer=tokenizer)
    return _pruners[tokenizer]


def water_fill(sizes: list[int], budget: int) -> list[int]:
    """Split `budget` so the shortest items stay whole and the longest share what is left equally."""
    alloc = [0] * len(sizes)
    left, n = max(0, budget), len(sizes)
    for i in sorted(range(len(sizes)), key=lambda k: sizes[k]):
        share = left // n
        alloc[i] = min(sizes[i], share)
        left -= alloc[i]
        n -= 1
    return alloc


def text_slots(i: int, message: dict[str, Any]) -> list[tuple[tuple[int, int | None], str]]:
    """The texts of message i that can be pruned: its content when it is a string ((i, None)), or each
    non-empty text part of a content list ((i, j): `{"type": "text", "text": ...}`; images, audio and
    other parts are never touched)."""
    content = message.get("content")
    if isinstance(content, str):
        return [((i, None), content)] if content else []
    if isinstance(content, list):
        return [((i, j), part["text"]) for j, part in enumerate(content)
                if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
                and part["text"]]
    return []


def with_texts(message: dict[str, Any], texts: dict[int | None, str]) -> dict[str, Any]:
    """A copy of `message` with the given texts in place: key None the string content, key j text part j."""
    if not texts:
        return message
    if None in texts:
        return {**message, "content": texts[None]}
    return {**message, "content": [{**part, "text": texts[j]} if j in texts else part
                                   for j, part in enumerate(message["content"])]}


def plan(job: dict[str, Any]) -> dict[str, Any]:
    """Entry point for the pool: never raises; errors come back as {"error": (status, message, code)}."""
    started = time.perf_counter()
    try:
        out = _plan_chat(job) if job["kind"] == "chat" else _plan_completion(job)
    except BackendError as exc:
        return {"error": (502, f"counting or budgeting with the upstream failed: {exc}", "upstream_error")}
    except CatpError as exc:
        return {"error": (400, str(exc), "prune_failed")}
    out["prune_s"] = time.perf_counter() - started
    return out


def _plan_chat(job: dict[str, Any]) -> dict[str, Any]:
    from catp.backends.budget import ChatCounter, engine_budget

    control = job["control"]
    client = _client(job.get("model"))
    counter = ChatCounter(client)
    tokenizer = _settings.get("tokenizer") or client.tokenizer_path()
    pruner, domain = _pruner(tokenizer), control.get("domain")

    messages = job["messages"]
    ordered = [m for m in messages if m.get("role") == "system"] + [m for m in messages if m.get("role") != "system"]
    texts = {slot: text for i, m in enumerate(ordered) if m.get("role") in PRUNABLE_ROLES
             for slot, text in text_slots(i, m)}
    candidates = list(texts)
    question = control.get("question")
    last = len(ordered) - 1
    if ordered and ordered[last].get("role") == "user":
        asked = [slot for slot in candidates if slot[0] == last]
        text = "\n".join(texts[slot] for slot in asked)
        if asked and len(candidates) > len(asked) and pruner.tokens.count(text) <= QUESTION_MAX_TOKENS:
            question = question or text
            candidates = [slot for slot in candidates if slot[0] != last]
    if not candidates:
        raise CatpError("nothing to prune: no user or tool message with text content besides the question")

    def with_contents(contents: dict[tuple[int, int | None], str]) -> list[dict[str, Any]]:
        return [with_texts(m, {part: text for (at, part), text in contents.items() if at == i})
                for i, m in enumerate(ordered)]

    max_tokens = job["max_tokens"]
    skeleton = with_contents({i: "" for i in candidates})
    figures = engine_budget(client, counter, skeleton, max_tokens=max_tokens, concurrency=job["concurrency"])
    limit = figures.prompt_limit.value
    if job.get("limit") is not None:
        limit = min(limit, job["limit"])
    overhead = figures.prompt_overhead.value
    doc_budget = limit - overhead
    if control.get("budget"):
        doc_budget = min(doc_budget, control["budget"])
    if doc_budget < len(candidates):
        raise CatpError(f"the system message, the question and the template take {overhead} of the "
                        f"{limit}-token prompt limit: no room for the documents")
    before = job.get("tokens_before") or counter.count(ordered)
    sizes = [pruner.tokens.count(texts[i]) for i in candidates]
    caps = sizes
    if control.get("ratio"):
        from catp.pipeline import parse_ratio

        ratio = parse_ratio(control["ratio"])
        caps = [max(1, int(s * ratio)) for s in sizes]
    for _ in range(FIT_ROUNDS):
        alloc = [min(a, c) for a, c in zip(water_fill(sizes, doc_budget), caps)]
        results, contents = [], {}
        for i, size, budget in zip(candidates, sizes, alloc):
            if size <= budget:
                contents[i] = texts[i]
                continue
            result = pruner.prune(texts[i], budget=max(1, budget), question=question, domain=domain)
            results.append(result)
            contents[i] = result.text
        out = with_contents(contents)
        after = counter.count(out)
        if after <= limit:
            break
        kept = sum(r.stats.output_tokens for r in results) + sum(
            s for s, a in zip(sizes, alloc) if s <= a)
        doc_budget = min(doc_budget - 1, kept * max(0, limit - overhead) // max(1, after - overhead))
    else:
        raise CatpError(f"the prompt is still over {limit} tokens after {FIT_ROUNDS} rounds of pruning")
    return {"messages": out, "tokens_before": before, "tokens_after": after, "limit": limit,
            "dropped_protected": sum(len(r.dropped_protected) for r in results),
            "question_aware": bool(question), "pruned": bool(results)}


def _plan_completion(job: dict[str, Any]) -> dict[str, Any]:
    from catp.backends.budget import ChatCounter, engine_budget

    control = job["control"]
    client = _client(job.get("model"))
    tokenizer = _settings.get("tokenizer") or client.tokenizer_path()
    pruner, domain = _pruner(tokenizer), control.get("domain")
    prompt = job["prompt"]
    # the chat skeleton's template counts a few tokens more than a bare prompt: a small, safe margin
    figures = engine_budget(client, ChatCounter(client), [{"role": "user", "content": ""}],
                            max_tokens=job["max_tokens"], concurrency=job["concurrency"])
    limit = figures.prompt_limit.value if job.get("limit") is None else min(figures.prompt_limit.value, job["limit"])
    budget = limit - figures.prompt_overhead.value
    if control.get("budget"):
        budget = min(budget, control["budget"])
    before = job.get("tokens_before") or client.count_text_tokens(prompt)
    for _ in range(FIT_ROUNDS):
        kwargs = {"ratio": control["ratio"]} if control.get("ratio") and not job.get("limit") else {"budget": budget}
        result = pruner.prune(prompt, question=control.get("question"), domain=domain, **kwargs)
        after = client.count_text_tokens(result.text)
        if after <= limit:
            break
        budget = min(result.stats.output_tokens - 1, result.stats.output_tokens * limit // max(1, after))
    else:
        raise CatpError(f"the prompt is still over {limit} tokens after {FIT_ROUNDS} rounds of pruning")
    return {"prompt": result.text, "tokens_before": before, "tokens_after": after, "limit": limit,
            "dropped_protected": len(result.dropped_protected), "question_aware": bool(control.get("question")),
            "pruned": True}
