"""catp as an eval method: one `Pruner` per domain, built once per worker process."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from evals.methods import Budget, Outcome
from evals.sizing import nonws_count

CHAR_FIT_TRIES = 6


@dataclass
class UnitView:
    """One unit's decision, for the failure listing."""

    start: int
    end: int
    kept: bool
    reasons: list[str]
    priority: int
    score: float
    deleted: bool
    tokens: int = 0  # its cost in the budget tokenizer
    rules: tuple[str, ...] = ()  # every rule that protects or boosts it (kept or not)


class CatpMethod:
    def __init__(self, name: str = "catp", *, domain: str | None = None, rules: tuple[str, ...] = (),
                 scorer: str = "lexical", tokenizer: str | None = None, scorer_options: dict | None = None) -> None:
        self.name = name
        self.domain, self.rules, self.scorer, self.tokenizer = domain, rules, scorer, tokenizer
        self.scorer_options = dict(scorer_options or {})
        self._pruner = None
        self._warm: set = set()  # the domains pruned once already

    def pruner(self, domain: str):
        """The one Pruner, for every domain (given per call: an LM is loaded once per process); a domain no
        rule set names fails here."""
        from catp.pipeline import Pruner

        if self._pruner is None:
            self._pruner = Pruner(domain=self.domain, rules=self.rules, tokenizer=self.tokenizer,
                                  scorer=self.scorer, scorer_options=self.scorer_options or None)
        self._pruner.call_domain(self.domain or domain)
        return self._pruner

    @property
    def counter(self):
        from catp.tokens import load_token_counter

        return load_token_counter(self.tokenizer)

    def run(self, text: str, budget: Budget, size, *, doc_id: str = "", domain: str = "general",
            question: str | None = None, explain: bool = False, cold: bool = True) -> Outcome:
        """Prune once within the budget. With `cold`, the time is that of a cold prune: the Pruner's
        cache of analysed texts is emptied first (it would make every later budget look faster).
        Question-aware runs pass cold=False: they reuse the analysis and are not timed."""
        pruner, domain = self.pruner(domain), self.domain or domain
        if domain not in self._warm:  # the first prune loads lexicons and taggers: not timed
            self._prune(pruner, text, 1, None, False, domain)
            self._warm.add(domain)
        if cold:
            _forget(pruner)
        if budget.unit == "tokens":
            return self._prune(pruner, text, int(budget.limit), question, explain, domain)
        found = self._fit_chars(pruner, text, budget.limit, size, question, explain, domain)
        if not cold:
            return found
        _forget(pruner)
        timed = self._prune(pruner, text, found.budget_used, question, explain, domain)
        timed.note = found.note
        return timed

    def _fit_chars(self, pruner, text, limit, size, question, explain, domain) -> Outcome:
        """Find a token budget whose output has <= limit non-whitespace characters."""
        input_tokens = pruner.tokens.count(text)
        tokens = max(int(limit * input_tokens / max(size.total, 1)), 0)
        best = None
        for _ in range(CHAR_FIT_TRIES):
            out = self._prune(pruner, text, tokens, question, explain, domain)
            chars = nonws_count(out.text)
            if chars <= limit:
                best = out
                if chars >= 0.97 * limit:
                    break
                tokens = max(int(tokens * limit / max(chars, 1)), tokens + 1)
            else:
                tokens = min(math.floor(tokens * limit / chars) - 1, tokens - 1)
                if tokens < 0:
                    break
            if best is not None and tokens <= best.budget_used:
                break
        if best is None:
            best = self._prune(pruner, text, 0, question, explain, domain)
            best.note = "no token budget met the character limit"
        return best

    def _prune(self, pruner, text, tokens, question, explain, domain=None) -> Outcome:
        started = time.perf_counter()
        if hasattr(pruner, "analyse") and hasattr(pruner, "finish"):
            doc = pruner.analyse(text, budget=tokens, question=question, domain=domain)
            result = pruner.finish(doc)
        else:
            doc, result = None, pruner.prune(text, budget=tokens, question=question)
        seconds = time.perf_counter() - started
        units = None
        if explain and doc is not None:
            units = [
                UnitView(u.start, u.end, d.kept, list(d.reasons) or list(doc.columns.rules[i]), d.priority,
                         round(d.score, 4), bool(doc.columns.deleted[i]), u.tokens, tuple(doc.columns.rules[i]))
                for i, (u, d) in enumerate(zip(doc.units, doc.decisions))
            ]
        return Outcome(kept=[(k.start, k.end) for k in result.kept], text=result.text, seconds=seconds,
                       reasons=[list(k.reasons) for k in result.kept], budget_used=tokens,
                       note="; ".join(result.warnings[:1]), units=units)


def _forget(pruner) -> None:
    """Empty the Pruner's cache of analysed texts."""
    clear = getattr(pruner, "clear_cache", None)
    if callable(clear):
        clear()
