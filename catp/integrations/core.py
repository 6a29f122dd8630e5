"""What the framework integrations share: retrieved texts pruned with the question, each to its own budget or all
together to one shared budget, and the `catp` metadata each pruned text carries.

The budget is given in tokens (`budget`), as a share of the input (`ratio`), or read from a vLLM server
(`server`), as `catp ask` reads it: the engine's document budget for catp's prompt template with this question
(docs/backend.md), less a blank line between each two documents. A budget is per document unless `shared=True`; a server's budget is one prompt's room, so it is
shared, or split evenly over the documents when `shared=False`.

Shared: the texts are joined (a blank line between them), pruned once, and the kept spans are mapped back to each
text, so catp ranks every text against the others. The sum of the texts' token counts never exceeds the budget
(a join that tokenizes differently from its parts is pruned again to a smaller budget).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from catp.config import DEFAULTS
from catp.errors import BudgetError, InputError
from catp.result import DroppedProtected, KeptSpan

log = logging.getLogger("catp.integrations")

SEPARATOR = "\n\n"  # between texts pruned together: a paragraph break, which ends a unit
SHARED_ROUNDS = 4  # pruning passes to bring a shared extract's per-text token sum within the budget


@dataclass
class PrunedText:
    """One text after pruning. Offsets are into the text as it came in."""

    text: str
    kept: list[KeptSpan]
    input_tokens: int
    output_tokens: int
    dropped_protected: list[DroppedProtected]
    budget: int  # this text's own budget, or the shared one
    shared: bool
    domain: str
    lang: str
    warnings: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.kept

    def metadata(self) -> dict[str, Any]:
        """The `catp` metadata: plain JSON types, so vector stores and tracers can keep it."""
        return {
            "kept": [{"start": s.start, "end": s.end, "reasons": list(s.reasons)} for s in self.kept],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "budget": self.budget,
            "shared_budget": self.shared,
            "dropped_protected": [d.model_dump() for d in self.dropped_protected],
            "domain": self.domain,
            "lang": self.lang,
            "warnings": list(self.warnings),
        }


class DocumentsPruner:
    """Prunes the texts a retriever returned, with the query as the question.

    Give one of `budget` (tokens), `ratio` ("1/6", 0.25) or `server` (a vLLM server URL: the budget `catp ask`
    would use, for `max_tokens` answer tokens and `concurrency` requests at once). `shared`: one budget for all
    texts together instead of one each. domain: "auto"/None (detected) or a domain name; rules: the user's rule
    files; tokenizer, scorer: as for `catp.Pruner` (with a server and no tokenizer, the served model's own when
    it is on this machine). `pruner`: a ready `catp.Pruner` to use instead (`domain`, when given, is its domain
    for these calls). Thread-safe: the Pruner is built
    once, on first use.
    """

    def __init__(self, *, budget: int | None = None, ratio: float | str | None = None, server: str | None = None,
                 shared: bool = False, domain: str | None = DEFAULTS.domain,
                 rules: str | Path | Sequence[str | Path] = DEFAULTS.rules, tokenizer: str | None = DEFAULTS.tokenizer,
                 scorer: str = DEFAULTS.scorer, max_tokens: int = DEFAULTS.max_tokens,
                 concurrency: int = DEFAULTS.concurrency, model: str | None = None, api_key: str | None = None,
                 pruner: Any = None) -> None:
        given = [name for name, value in (("budget", budget), ("ratio", ratio), ("server", server))
                 if value is not None]
        if len(given) != 1:
            raise BudgetError("give one of budget (tokens), ratio (e.g. 1/6) or server (a vLLM server URL)"
                              + (f", not {' and '.join(given)}" if given else ""))
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
            raise BudgetError(f"budget must be a whole number of tokens >= 0, got {budget!r}")
        if ratio is not None:
            from catp.pipeline import parse_ratio

            parse_ratio(ratio)  # a bad ratio fails here, not at the first query
        self.budget, self.ratio, self.server, self.shared = budget, ratio, server, shared
        self.domain, self.rules, self.tokenizer, self.scorer = domain, rules, tokenizer, scorer
        self.max_tokens, self.concurrency, self.model, self.api_key = max_tokens, concurrency, model, api_key
        self._pruner = pruner
        self._lock = threading.Lock()
        if pruner is None and server is None:
            self.pruner()  # bad rule files, domain or tokenizer fail when the component is built

    def pruner(self, backend: Any = None):
        with self._lock:
            if self._pruner is None:
                from catp.pipeline import Pruner

                tokenizer = self.tokenizer or (backend.tokenizer_path() if backend is not None else None)
                self._pruner = Pruner(domain=self.domain, rules=self.rules, tokenizer=tokenizer, scorer=self.scorer)
            return self._pruner

    def prune(self, texts: Sequence[str], question: str | None = None) -> list[PrunedText]:
        """Each text pruned (in the order given), offsets into that text."""
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"document {i}'s text must be a str, got {type(text).__name__}")
        question = question if question and question.strip() else None
        live = [i for i, t in enumerate(texts) if t.strip()]
        if not live:
            return [_untouched(t) for t in texts]
        if self.server is not None:
            pruner, total = self._server_budget([texts[i] for i in live], question)
            total -= (len(live) - 1) * pruner.tokens.count(SEPARATOR)  # the blank lines that will join them
            budget, ratio = (max(total, 0), None) if self.shared else (max(total, 0) // len(live), None)
        else:
            pruner, budget, ratio = self.pruner(), self.budget, self.ratio
        out: list[PrunedText] = [_untouched(t) for t in texts]
        if self.shared:
            for i, pruned in zip(live, _prune_shared(pruner, [texts[i] for i in live], question, budget, ratio,
                                                     self.domain)):
                out[i] = pruned
        else:
            for i in live:
                out[i] = _prune_one(pruner, texts[i], question, budget, ratio, self.domain)
        return out

    def _server_budget(self, texts: list[str], question: str | None):
        """The document budget of one `catp ask` prompt on the server, for this question."""
        from catp.backends.budget import ChatCounter, engine_budget
        from catp.backends.client import VLLMClient
        from catp.backends.messages import normalize_messages
        from catp.backends.templates import load_templates
        from catp.detect import detect_langs

        with VLLMClient(self.server, model=self.model, api_key=self.api_key) as backend:
            pruner = self.pruner(backend)
            lang = detect_langs(SEPARATOR.join(texts))[0]
            template = load_templates(None)[lang if lang in ("en", "zh") else "en"]
            gap = pruner.gap_marker.strip() or pruner.gap_marker
            skeleton = normalize_messages(template.render("", question or "", gap=gap))[0]
            figures = engine_budget(backend, ChatCounter(backend), skeleton, max_tokens=self.max_tokens,
                                    concurrency=self.concurrency)
        for warning in figures.warnings:
            log.warning("catp: %s", warning)
        return pruner, figures.document_budget.value


def _untouched(text: str) -> PrunedText:
    """An empty (or blank) text: nothing to prune."""
    return PrunedText(text=text, kept=[KeptSpan(start=0, end=len(text), reasons=["empty"])] if text else [],
                      input_tokens=0, output_tokens=0, dropped_protected=[], budget=0, shared=False,
                      domain="", lang="")


def _prune_one(pruner, text: str, question: str | None, budget: int | None, ratio,
               domain: str | None = None) -> PrunedText:
    result = pruner.prune(text, budget=budget, ratio=ratio, question=question, domain=domain)
    stats = result.stats
    return PrunedText(text=result.text, kept=result.kept, input_tokens=stats.input_tokens,
                      output_tokens=stats.output_tokens, dropped_protected=result.dropped_protected,
                      budget=stats.budget, shared=False, domain=stats.domain, lang=stats.lang,
                      warnings=result.warnings)


def _prune_shared(pruner, texts: list[str], question: str | None, budget: int | None, ratio,
                  domain: str | None = None) -> list[PrunedText]:
    joined = SEPARATOR.join(texts)
    starts, at = [], 0
    for text in texts:
        starts.append(at)
        at += len(text) + len(SEPARATOR)
    inputs = [pruner.tokens.count(t) for t in texts]
    if budget is None:
        from catp.pipeline import parse_ratio

        budget = int(parse_ratio(ratio) * sum(inputs))
    target = budget
    for _ in range(SHARED_ROUNDS):
        result = pruner.prune(joined, budget=target, question=question, domain=domain)
        pieces = _split(result, texts, starts, pruner.gap_marker)
        outputs = [pruner.tokens.count(text) for text, _, _ in pieces]
        over = sum(outputs) - budget
        if over <= 0:
            break
        target = max(0, target - over)  # the texts tokenize apart differently from the join: prune to less
    else:
        raise BudgetError(f"the shared extract is still over {budget} tokens after {SHARED_ROUNDS} passes")
    stats = result.stats
    return [PrunedText(text=text, kept=kept, input_tokens=n_in, output_tokens=n_out, dropped_protected=dropped,
                       budget=budget, shared=True, domain=stats.domain, lang=stats.lang,
                       warnings=list(result.warnings))
            for (text, kept, dropped), n_in, n_out in zip(pieces, inputs, outputs)]


def _split(result, texts: list[str], starts: list[int], gap_marker: str):
    """The joined extract's kept spans and dropped protected spans, per text, in each text's offsets."""
    pieces = []
    for text, base in zip(texts, starts):
        end = base + len(text)
        kept = []
        for span in result.kept:
            a, b = max(span.start, base) - base, min(span.end, end) - base
            if a >= b:
                continue
            while a < b and text[a].isspace():  # a span across the separator: its whitespace is not this text's
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            if a < b:
                kept.append(KeptSpan(start=a, end=b, reasons=span.reasons))
        dropped = [d.model_copy(update={"start": d.start - base, "end": min(d.end, end) - base,
                                        "text": text[d.start - base:min(d.end, end) - base]})
                   for d in result.dropped_protected if base <= d.start < end]  # clipped at the text's end
        pieces.append((gap_marker.join(text[s.start:s.end] for s in kept), kept, dropped))
    return pieces


class PrunerSettings(BaseModel):
    """The settings of a framework component that prunes with a DocumentsPruner (LangChain's compressor,
    LlamaIndex's postprocessor: both pydantic models), and the DocumentsPruner built from them. The pruning
    settings default to catp.config.DEFAULTS."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    budget: int | None = None
    ratio: float | str | None = None
    server: str | None = None
    shared: bool = False
    domain: str | None = DEFAULTS.domain
    rules: str | Path | list[str | Path] = list(DEFAULTS.rules)
    tokenizer: str | None = DEFAULTS.tokenizer
    scorer: str = DEFAULTS.scorer
    max_tokens: int = DEFAULTS.max_tokens
    concurrency: int = DEFAULTS.concurrency
    model: str | None = None
    api_key: str | None = None
    drop_empty: bool = True
    pruner: Any = Field(default=None, exclude=True)  # a ready catp.Pruner to share (its rules, tokenizer, cache)

    _pruner: DocumentsPruner = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._pruner = DocumentsPruner(
            budget=self.budget, ratio=self.ratio, server=self.server, shared=self.shared, domain=self.domain,
            rules=self.rules, tokenizer=self.tokenizer, scorer=self.scorer, max_tokens=self.max_tokens,
            concurrency=self.concurrency, model=self.model, api_key=self.api_key, pruner=self.pruner)
