"""`ask`: prune a document to the engine's budget, then ask the model a question about it.

No silent truncation: the prompt is counted exactly (chat template included) before it is
sent and pruned again if it is over; if the server still rejects it as too long (HTTP 400),
it is pruned once more to a smaller budget and sent once more, and both steps are logged
and recorded in the result.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from catp.backends.base import Backend
from catp.backends.budget import ChatCounter, EngineBudget, engine_budget
from catp.backends.client import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, DEFAULT_TOTAL_TIMEOUT, ContextLengthError, VLLMClient
from catp.backends.messages import normalize_messages
from catp.backends.templates import PromptTemplate, load_templates
from catp.decode import has_lone_surrogates
from catp.errors import BackendError, BudgetError, InputError
from catp.result import PruneResult

log = logging.getLogger("catp.backends.ask")

PRECHECK_ROUNDS = 3


class PruneAttempt(BaseModel):
    """One pass of pruning and what became of it."""

    document_budget: int  # tokens given to the pruner (in its tokenizer)
    document_tokens: int  # what the pruned document came to (in its tokenizer)
    prompt_tokens: int | None  # the whole prompt, counted in the served model's tokenizer
    outcome: str


class AskResult(BaseModel):
    answer: str
    finish_reason: str | None
    model: str
    backend: str
    lang: str
    budget: EngineBudget  # the engine's figures and where each came from
    document_budget: int  # the budget the sent document was pruned to
    prompt_tokens: int | None  # tokens sent (the server's count when it reports one)
    completion_tokens: int | None
    max_tokens: int
    tokenizer: str  # the pruner's tokenizer
    attempts: list[PruneAttempt]
    reprunes: int  # pruning passes after the first
    prune: PruneResult  # what was kept, what protected content was forced out
    messages: list[dict[str, str]]  # the request as sent
    warnings: list[str]
    streamed: bool
    elapsed_s: float


def ask(
    document: str | bytes | os.PathLike,
    question: str,
    *,
    server: str | None = None,
    backend: Backend | None = None,
    model: str | None = None,
    api_key: str | None = None,
    domain: str | None = None,
    rules: str | Path | Sequence[str | Path] = (),
    scorer: str = "lexical",
    tokenizer: str | None = None,
    pruner: Any = None,
    template: str | Path | PromptTemplate | None = None,
    lang: str | None = None,
    messages: Sequence[Mapping[str, str]] = (),
    max_tokens: int = 512,
    concurrency: int = 1,
    budget: int | None = None,
    precheck: bool = True,
    use_metrics: bool = True,
    max_model_len: int | None = None,
    temperature: float = 0.0,
    on_delta: Callable[[str], None] | None = None,
    extra: Mapping[str, Any] | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    retries: int = 2,
    timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
) -> AskResult:
    """Prune `document` (text, bytes, or a path) to fit, then ask `question` about it.

    The backend is a running vLLM server (`server=URL`) or any `Backend` (a `VLLMClient`,
    an in-process `LocalEngine`). `messages` are extra messages (history, instructions) put
    between the template's system message and the question; system messages among them are
    moved to the front, with a warning. `budget` overrides the engine's document budget;
    with `precheck=False` the prompt is sent without counting it first. `on_delta` streams.
    `extra` holds more request fields, e.g. {"top_p": 0.9, "seed": 1}.
    """
    started = time.perf_counter()
    text = _read(document)
    if not question or not question.strip():
        raise InputError("the question is empty")
    if has_lone_surrogates(question):  # it could not be sent as JSON
        raise InputError(f"the question {question!r} holds lone surrogates (not valid UTF-8)")
    messages = list(messages)
    if messages:
        normalize_messages(messages)  # bad extra messages fail before any request
    own_backend = backend is None
    if backend is None:
        if not server:
            raise BackendError("no backend: give a server URL (--server) or a backend object")
        backend = VLLMClient(server, model=model, api_key=api_key, connect_timeout=connect_timeout,
                             read_timeout=read_timeout, retries=retries, timeout=timeout)
    try:
        return _ask(backend, text, question, started=started, domain=domain, rules=rules, scorer=scorer,
                    tokenizer=tokenizer, pruner=pruner, template=template, lang=lang, extra_messages=messages,
                    max_tokens=max_tokens, concurrency=concurrency, budget=budget, precheck=precheck,
                    use_metrics=use_metrics, max_model_len=max_model_len, temperature=temperature,
                    on_delta=on_delta, request_extra=extra)
    finally:
        if own_backend:
            backend.close()


def _ask(backend: Backend, text: str, question: str, *, started: float, domain, rules, scorer, tokenizer,
         pruner, template, lang, extra_messages, max_tokens, concurrency, budget, precheck, use_metrics,
         max_model_len, temperature, on_delta, request_extra) -> AskResult:
    from catp.detect import detect_langs
    from catp.pipeline import Pruner

    warnings: list[str] = []
    lang = lang or detect_langs(text)[0]
    if lang not in ("en", "zh"):
        raise InputError(f"lang must be 'en' or 'zh', got {lang!r}")
    tmpl = template if isinstance(template, PromptTemplate) else load_templates(template)[lang]

    if pruner is None:
        from catp.rules.loader import load_rule_files
        from catp.rules.catalog import resolve

        rules = load_rule_files(rules)  # parsed once, here; the Pruner takes them as they are
        resolve(domain, rules)  # a bad domain or rule file fails here, before any request
        tokenizer = tokenizer or backend.tokenizer_path()  # the served model's own, when it is here
        pruner = Pruner(domain=domain, rules=rules, tokenizer=tokenizer, scorer=scorer)
    gap = pruner.gap_marker.strip() or pruner.gap_marker

    def build(document: str) -> tuple[list[dict[str, str]], list[str]]:
        *head, user = tmpl.render(document, question, gap=gap)
        return normalize_messages([*head, *extra_messages, user])

    skeleton, reordered = build("")
    warnings += reordered
    counter = ChatCounter(backend)
    figures = engine_budget(backend, counter, skeleton, max_tokens=max_tokens, concurrency=concurrency,
                            max_model_len=max_model_len, use_metrics=use_metrics)
    warnings += figures.warnings
    limit = figures.prompt_limit.value
    doc_budget = figures.document_budget.value
    if budget is not None:
        if budget > doc_budget:
            warnings.append(f"the given budget of {budget} tokens is over the engine's document budget of {doc_budget}")
        doc_budget = budget

    attempts: list[PruneAttempt] = []
    result = pruner.prune(text, budget=doc_budget, question=question)
    msgs = build(result.text)[0]

    if precheck:
        for _ in range(PRECHECK_ROUNDS):
            sent = counter.count(msgs)
            if sent <= limit:
                break
            new_budget = _smaller_budget(result, sent, limit, figures.prompt_overhead.value)
            note = (f"the prompt counts {sent} tokens ({counter.source}), over the limit of {limit}: "
                    f"pruning again to a document budget of {new_budget}")
            log.warning(note)
            warnings.append(note)
            attempts.append(_attempt(doc_budget, result, sent, "over the limit before sending; pruned again"))
            doc_budget = new_budget
            result = pruner.prune(text, budget=doc_budget, question=question)
            msgs = build(result.text)[0]
        else:
            raise BudgetError(f"the prompt is still over {limit} tokens after {PRECHECK_ROUNDS} rounds of pruning")

    for round_ in (1, 2):
        try:
            gen = backend.chat(msgs, max_tokens=max_tokens, temperature=temperature, on_delta=on_delta,
                               extra=request_extra)
            attempts.append(_attempt(doc_budget, result, gen.prompt_tokens, "sent and answered"))
            break
        except ContextLengthError as exc:
            sent = _count_or(counter, msgs, exc.prompt_tokens)
            attempts.append(_attempt(doc_budget, result, sent, f"rejected as too long: {exc}"))
            if round_ == 2:
                raise BackendError(f"{exc} (still too long after pruning again to {doc_budget} tokens)") from exc
            server_limit = (exc.limit - max_tokens) if exc.limit else limit
            target = max(1, min(limit, server_limit))
            if sent is None:
                new_budget = result.stats.output_tokens // 2
            else:
                new_budget = _smaller_budget(result, sent, target, figures.prompt_overhead.value)
            note = (f"{backend.name} rejected the prompt as too long (HTTP 400, {sent} tokens); pruning again "
                    f"to a document budget of {new_budget} and retrying once")
            log.warning(note)
            warnings.append(note)
            doc_budget = new_budget
            result = pruner.prune(text, budget=doc_budget, question=question)
            msgs = build(result.text)[0]

    if gen.finish_reason == "length":  # said, never silent: the answer stopped at its token limit
        warnings.append(_cut_note(gen, max_tokens, figures.max_model_len.value))
    warnings += result.warnings
    return AskResult(
        answer=gen.text, finish_reason=gen.finish_reason, model=gen.model or backend.model, backend=backend.name,
        lang=lang, budget=figures, document_budget=doc_budget,
        prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens, max_tokens=max_tokens,
        tokenizer=result.stats.tokenizer, attempts=attempts, reprunes=len(attempts) - 1, prune=result,
        messages=msgs, warnings=warnings, streamed=gen.streamed,
        elapsed_s=round(time.perf_counter() - started, 6),
    )


def _cut_note(gen, max_tokens: int, max_model_len: int) -> str:
    room = max_model_len - gen.prompt_tokens if gen.prompt_tokens is not None else max_tokens
    if room < max_tokens:  # vLLM shortens max_tokens to what max_model_len leaves, without a word
        return (f"the answer was cut at {gen.completion_tokens} tokens: the prompt's {gen.prompt_tokens} tokens "
                f"left {room} of max_tokens {max_tokens} within max_model_len {max_model_len}")
    return f"the answer was cut at max_tokens {max_tokens} (finish_reason length); raise --max-tokens for more"


def _smaller_budget(result: PruneResult, sent: int, limit: int, overhead: int) -> int:
    """Scale the document by the share of it that fits, in whatever tokenizer the pruner uses;
    always at least one token less than what was pruned to."""
    doc_served = max(1, sent - overhead)
    allowed = max(0, limit - overhead)
    scaled = result.stats.output_tokens * allowed // doc_served
    return max(0, min(scaled, result.stats.output_tokens - 1, result.stats.budget - 1))


def _attempt(doc_budget: int, result: PruneResult, prompt_tokens: int | None, outcome: str) -> PruneAttempt:
    return PruneAttempt(document_budget=doc_budget, document_tokens=result.stats.output_tokens,
                        prompt_tokens=prompt_tokens, outcome=outcome)


def _count_or(counter: ChatCounter, msgs: list[dict[str, str]], fallback: int | None) -> int | None:
    try:
        return counter.count(msgs)
    except BackendError:
        return fallback


def _read(document: str | bytes | os.PathLike) -> str:
    from catp.decode import decode_bytes, read_text

    if isinstance(document, os.PathLike):
        return read_text(os.fspath(document))[0]
    if isinstance(document, bytes):
        return decode_bytes(document)[0]
    if not isinstance(document, str):
        raise InputError(f"document must be text, bytes or a path, got {type(document).__name__}")
    if not document.strip():
        raise InputError("the document is empty")
    return document
