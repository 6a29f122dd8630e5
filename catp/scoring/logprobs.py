"""Shared, backend-free logic of the self-information scorers (no torch here).

A backend (`catp.scoring.lm` runs transformers, `catp.scoring.remote` asks a
vLLM server) only has to say how many nats each token of a token sequence costs
given the tokens before it. This module does the rest:

* tokenize the document with the *scorer's* tokenizer and map its tokens to the
  document's units through character offsets (the budget tokenizer may differ);
* plan sliding windows so that every scored token sees at least `overlap`
  tokens of left context, running only windows that cover candidate units;
* aggregate token surprisal to units (mean or max), settle the budget early,
  bound the work (`max_tokens`) and fall back for the units left over;
* the question-aware score (LongLLMLingua's coarse ranking, see docs/scorer.md).
"""

from __future__ import annotations

import bisect
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from catp.document import Document
from catp.errors import ModelError
from catp.scoring.base import rank_map

AGGREGATES = ("mean", "max")
# Options every self-information scorer understands (from_options); None = default.
COMMON_OPTIONS = ("window", "overlap", "stride", "aggregate", "max_tokens", "batch_tokens", "question_template")

_RESTRICT_EN = "We can get the answer to this question in the given documents."
_RESTRICT_ZH = "我们可以在给定的文档中找到这个问题的答案。"
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True, slots=True)
class Window:
    """Feed tokens [start, end); score tokens [score_from, end) that are needed."""

    start: int
    end: int
    score_from: int


@dataclass(slots=True)
class ScoreStats:
    """What the last `score` call did; tests and `catp explain` read it."""

    doc_tokens: int = 0  # document length in scorer tokens
    tokens_fed: int = 0  # tokens the model ran over (windows + question sequences)
    windows: int = 0
    sequences: int = 0  # question-aware sequences
    units_scored: int = 0  # candidates scored by the model
    units_fallback: int = 0  # candidates given the fallback score
    settled: str | None = None  # why the model did not run at all, if it did not
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def plan_windows(n: int, needed: Sequence[tuple[int, int]], window: int, overlap: int) -> list[Window]:
    """Windows of `min(window, n)` tokens that score every needed token once.

    `needed` holds sorted, disjoint half-open token ranges. A token p is scored
    in a window starting at s <= p - overlap (or s = 0), so it has at least
    `overlap` tokens of left context unless it lies near the document start.
    Token 0 is never scored (nothing predicts it). All windows have one length,
    so a backend can batch them without padding.
    """
    if overlap < 0 or overlap >= window:
        raise ModelError(f"scorer overlap must be in [0, window); got overlap={overlap}, window={window}")
    if n < 2:
        return []
    length = min(window, n)
    starts = [a for a, _ in needed]
    out: list[Window] = []
    pos = _next_needed(needed, starts, 1)
    while pos is not None:
        s = max(0, pos - max(overlap, 1))
        if s + length > n:
            s = n - length
        e = s + length
        out.append(Window(s, e, pos))
        pos = _next_needed(needed, starts, e)
    return out


def plan_lanes(windows: Sequence[Window], context: int, lanes: int, max_len: int | None = None) -> list[list[Window]]:
    """Cut a window plan into lanes: runs of windows that each continue the one before.

    Window w continues p when it scores from where p ends and starts `context` tokens
    before that (w.score_from == p.end == w.start + context): a backend that keeps p's
    keys/values for those `context` tokens need only feed w's `len - context` new tokens.
    Chains of such windows are split into about `lanes` pieces of near-equal length
    (balanced, so pieces of one chain run in lock-step); a piece's first window is fed
    whole (its warm-up). A piece spans at most `max_len` tokens (positions stay in range).
    Every window of the plan is in exactly one piece, in order.
    """
    chains: list[list[Window]] = []
    for w in windows:
        p = chains[-1][-1] if chains else None
        if p is not None and w.score_from == p.end == w.start + context and w.end > p.end:
            chains[-1].append(w)
        else:
            chains.append([w])
    multi = sum(len(c) for c in chains if len(c) > 1)
    per = max(1, -(-multi // max(1, lanes)))
    if max_len is not None and windows:
        length = windows[0].end - windows[0].start
        step = length - context
        per = min(per, max(1, 1 + (max_len - length) // step if step > 0 else 1))
    return [piece for c in chains for piece in even_batches(c, per)]


def even_batches(items: Sequence, most: int) -> list:
    """Split into the fewest batches of at most `most`, sizes differing by at most one
    (fewer distinct shapes for compiled kernels, no tiny last batch)."""
    k = -(-len(items) // most)
    size, extra = divmod(len(items), k) if k else (0, 0)
    out, i = [], 0
    for j in range(k):
        n = size + (1 if j < extra else 0)
        out.append(items[i:i + n])
        i += n
    return out


def _next_needed(needed: Sequence[tuple[int, int]], starts: list[int], p: int) -> int | None:
    """Smallest needed position >= p, or None."""
    i = bisect.bisect_right(starts, p) - 1
    if i >= 0 and needed[i][1] > p:
        return p
    i += 1
    return needed[i][0] if i < len(needed) else None


def needed_ranges(needed: Sequence[tuple[int, int]], starts: list[int], lo: int, hi: int):
    """The parts of the sorted, disjoint `needed` ranges inside [lo, hi); `starts` = their starts."""
    i = max(0, bisect.bisect_right(starts, lo) - 1)
    while i < len(needed) and needed[i][0] < hi:
        a, b = max(needed[i][0], lo), min(needed[i][1], hi)
        if a < b:
            yield a, b
        i += 1


def merge_ranges(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[1] > r[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def unit_token_ranges(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """For each character span, the half-open range of tokens overlapping it."""
    starts: list[int] = []
    ends: list[int] = []
    hi_s = hi_e = 0
    for s, e in offsets:  # force monotone, in case a tokenizer reports odd offsets
        hi_s, hi_e = max(hi_s, s), max(hi_e, e)
        starts.append(hi_s)
        ends.append(hi_e)
    out = []
    for s, e in spans:
        if e <= s:
            out.append((0, 0))
            continue
        t0 = bisect.bisect_right(ends, s)  # first token ending after s
        t1 = bisect.bisect_left(starts, e)  # first token starting at/after e
        out.append((t0, max(t0, t1)))
    return out


def leading_special_token(tokenizer) -> int | None:
    """The token the tokenizer puts before every text (Gemma's <bos>), or None (Qwen adds none).
    A model trained so sees it at position 0 of every sequence; without it Gemma's surprisal is off."""
    plain = list(tokenizer.encode("a", add_special_tokens=False).ids)
    full = list(tokenizer.encode("a", add_special_tokens=True).ids)
    if len(full) > len(plain) and full[1:len(plain) + 1] == plain:
        return int(full[0])
    return None


def aggregate(values: Sequence[float], how: str) -> float:
    return max(values) if how == "max" else math.fsum(values) / len(values)


# What follows a unit in question-aware mode: the question, then LongLLMLingua's
# "restrictive statement" ({restrict}: English or Chinese, after the question's script).
QUESTION_TEMPLATE = "\n\nQuestion: {question}\n{restrict}"


def question_suffix(question: str, template: str = QUESTION_TEMPLATE) -> str:
    """The text whose surprisal measures a unit's relevance (appended after the unit)."""
    restrict = _RESTRICT_ZH if _CJK.search(question) else _RESTRICT_EN
    try:
        return template.format(question=question.strip(), restrict=restrict)
    except (KeyError, IndexError, ValueError):
        raise ModelError(f"bad question template {template!r}: use {{question}} and {{restrict}}") from None


class SelfInformationScorer:
    """Base of `LMScorer` and `VLLMScorer`: everything but running the model.

    Subclasses set `name`, `tokenizer` (a `tokenizers.Tokenizer`), `max_len` (the
    longest sequence the model takes) and implement `_nll_windows` and
    `_nll_sequences`.
    """

    name = "selfinfo"
    cheap = False  # a model pass per window: the engine asks only for what the rules left undecided
    tokenizer: Any
    max_len: int

    def __init__(self, *, window: int = 4096, overlap: int | None = None, stride: int | None = None,
                 aggregate: str = "mean", max_tokens: int | None = None,
                 batch_tokens: int | None = None, question_template: str = QUESTION_TEMPLATE) -> None:
        if aggregate not in AGGREGATES:
            raise ModelError(f"scorer aggregate must be one of {', '.join(AGGREGATES)}; got {aggregate!r}")
        window = _positive_int("window", window)
        if stride is not None and overlap is not None:
            raise ModelError("give the scorer either stride or overlap, not both")
        if stride is not None:
            overlap = window - _positive_int("stride", stride)
        overlap = min(1024, window // 4) if overlap is None else _nonneg_int("overlap", overlap)
        if not 0 <= overlap < window:
            raise ModelError(f"scorer overlap must be in [0, window); got overlap={overlap}, window={window}")
        self.window = window
        self.overlap = int(overlap)
        self.aggregate = aggregate
        self.max_tokens = None if max_tokens is None else _nonneg_int("max_tokens", max_tokens)
        self.batch_tokens = None if batch_tokens is None else _positive_int("batch_tokens", batch_tokens)
        if "{question}" not in question_template:
            raise ModelError("the question template must contain {question}")
        question_suffix("?", question_template)  # fail now on a bad template
        self.question_template = question_template
        self.last_stats = ScoreStats()

    # --- token level ---------------------------------------------------------------
    def plan(self, n: int, needed: Sequence[tuple[int, int]]) -> list[Window]:
        """The windows that score `needed` token ranges of an n-token sequence."""
        return plan_windows(n, needed, min(self.window, self.max_len), self.overlap)

    def fed_tokens(self, windows: Sequence[Window]) -> int:
        """Tokens the model is fed to run `windows` (a backend that reuses context feeds fewer)."""
        return sum(w.end - w.start for w in windows)

    def token_nll(self, ids: Sequence[int]) -> list[float]:
        """Surprisal (nats) of every token of `ids` (the first is nan), windowed as configured."""
        needed = [(1, len(ids))]
        return self._nll_windows(ids, self.plan(len(ids), needed), needed)

    # --- backend hooks -------------------------------------------------------
    def _nll_windows(self, ids: Sequence[int], windows: Sequence[Window],
                     needed: Sequence[tuple[int, int]]) -> list[float]:
        """Surprisal (nats) of each token of `ids`: needed tokens in the windows' scored
        ranges get a number, all others nan."""
        raise NotImplementedError

    def _nll_sequences(self, seqs: Sequence[Sequence[int]], measure_from: Sequence[int]) -> list[float]:
        """Mean surprisal of tokens [measure_from[i], len(seqs[i])) of each sequence."""
        raise NotImplementedError

    # --- the Scorer protocol ---------------------------------------------------
    def score(self, doc: Document, candidates: Sequence[int], *, question: str | None = None,
              budget_tokens: int | None = None) -> dict[int, float]:
        t_start = time.perf_counter()
        stats = self.last_stats = ScoreStats()
        cands = sorted(set(int(c) for c in candidates))
        if not cands:
            return {}
        for c in cands:
            if not 0 <= c < len(doc.units):
                raise ModelError(f"candidate unit {c} is not in the document ({len(doc.units)} units)")
        todo = self._worth_scoring(doc, cands, budget_tokens, stats)
        if not todo:
            stats.units_fallback = len(cands)
            stats.seconds = time.perf_counter() - t_start
            return self._fallback(doc, cands, {}, question)

        enc = self.tokenizer.encode(doc.text, add_special_tokens=False)
        ids, offsets = list(enc.ids), list(enc.offsets)
        stats.doc_tokens = len(ids)
        spans = [(doc.units[c].start, doc.units[c].end) for c in todo]
        tranges = dict(zip(todo, unit_token_ranges(offsets, spans)))

        if question is not None and question.strip():
            scored = self._score_question(ids, todo, tranges, question, stats)
        else:
            scored = self._score_selfinfo(ids, todo, tranges, stats)
        stats.units_scored = len(scored)
        left = [c for c in cands if c not in scored]
        stats.units_fallback = len(left)
        todo_set = set(todo)
        # units with no token to predict (empty, or only the document's first token) cannot be scored
        unsettled_left = [c for c in left if c in todo_set and tranges[c][1] > max(1, tranges[c][0])]
        if unsettled_left:
            bound = f"max_tokens={self.max_tokens}" if self.max_tokens is not None else "the model's reach"
            doc.warnings.append(
                f"{self.name} scorer: {len(unsettled_left)} of {len(todo)} candidate units lie beyond "
                f"{bound} scorer tokens and got a fallback score"
            )
        out = self._fallback(doc, left, scored, question)
        out.update(scored)
        stats.seconds = time.perf_counter() - t_start
        return {c: out[c] for c in cands}

    # --- pieces ----------------------------------------------------------------
    def _worth_scoring(self, doc: Document, cands: list[int], budget: int | None,
                       stats: ScoreStats) -> list[int]:
        """Candidates whose score can change the selection; [] when the budget is settled. Selection ranks
        every unit by value per token, protected ones too, so a candidate can be kept while protected units
        are left out: the decided units filling the budget settle nothing."""
        if budget is None or not doc.units or not any(u.tokens for u in doc.units):
            return cands  # no budget, or unit costs unknown: score everything
        deleted = doc.columns.deleted if len(doc.columns.deleted) == len(doc.units) else [False] * len(doc.units)
        if sum(u.tokens for u in doc.units if not deleted[u.index]) <= budget:
            stats.settled = "all units fit the budget"
            return []
        # a unit longer than the whole budget can never be kept: its score cannot matter
        return [c for c in cands if doc.units[c].tokens <= budget]

    def _score_selfinfo(self, ids: list[int], todo: list[int], tranges: dict[int, tuple[int, int]],
                        stats: ScoreStats) -> dict[int, float]:
        needed = merge_ranges([(max(1, a), b) for a, b in tranges.values()])
        windows = self.plan(len(ids), needed)
        if self.max_tokens is not None:
            fed, keep = 0, []
            for w in windows:
                if fed + (w.end - w.start) > self.max_tokens:
                    break
                keep.append(w)
                fed += w.end - w.start
            windows = keep
        stats.windows = len(windows)
        stats.tokens_fed = self.fed_tokens(windows)
        nll = self._nll_windows(ids, windows, needed) if windows else [math.nan] * len(ids)
        out: dict[int, float] = {}
        for c in todo:
            a, b = tranges[c]
            vals = nll[max(1, a):b]
            if vals and not any(math.isnan(v) for v in vals):
                out[c] = aggregate(vals, self.aggregate)
        return out

    def _score_question(self, ids: list[int], todo: list[int], tranges: dict[int, tuple[int, int]],
                        question: str, stats: ScoreStats) -> dict[int, float]:
        """Relevance = S(q) - S(q | unit): how many nats the unit saves the question.

        S(q | x) is the mean surprisal of the question tokens after x (LongLLMLingua's
        coarse-grained, question-conditioned perplexity); S(q) the same with no unit.
        """
        q_ids = list(self.tokenizer.encode(question_suffix(question, self.question_template),
                                           add_special_tokens=False).ids)
        limit = min(self.window, self.max_len)
        if len(q_ids) < 2 or len(q_ids) > limit // 2:
            raise ModelError(f"question is too long for the scorer ({len(q_ids)} tokens; at most {limit // 2})")
        room = limit - len(q_ids)
        seqs: list[list[int]] = [q_ids]
        starts: list[int] = [1]
        units: list[int] = []
        fed = len(q_ids)
        for c in todo:
            a, b = tranges[c]
            if b <= a:
                continue
            u_ids = ids[max(a, b - room):b]  # the unit's last `room` tokens
            cost = len(u_ids) + len(q_ids)
            if self.max_tokens is not None and fed + cost > self.max_tokens:
                break
            seqs.append(u_ids + q_ids)
            starts.append(len(u_ids) + 1)
            units.append(c)
            fed += cost
        stats.sequences = len(seqs)
        stats.tokens_fed = fed
        if not units:
            return {}
        means = self._nll_sequences(seqs, starts)
        base = means[0]
        stats.extra["question_surprisal"] = base
        return {c: base - m for c, m in zip(units, means[1:])}

    def _fallback(self, doc: Document, units: list[int], scored: dict[int, float],
                  question: str | None) -> dict[int, float]:
        """Lexical scores for units the model did not score, on the model scores' scale."""
        if not units:
            return {}
        lex = _lexical_scores(doc, units, question)
        return rank_map(lex, list(scored.values()))


def _lexical_scores(doc: Document, units: list[int], question: str | None) -> dict[int, float]:
    from catp.scoring.lexical import LexicalScorer  # no model: cheap, and always there

    return {int(k): float(v) for k, v in LexicalScorer().score(doc, units, question=question).items()}


def _as_int(name: str, value: Any, lowest: int) -> int:
    """An integer option >= lowest; numeric strings are accepted, floats with a fraction and bools are not."""
    kind = "positive" if lowest > 0 else "non-negative"
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        v = int(value)
    except (TypeError, ValueError):
        raise ModelError(f"scorer {name} must be a {kind} integer; got {value!r}") from None
    if v < lowest:
        raise ModelError(f"scorer {name} must be a {kind} integer; got {value!r}")
    return v


def _positive_int(name: str, value: Any) -> int:
    return _as_int(name, value, 1)


def _nonneg_int(name: str, value: Any) -> int:
    return _as_int(name, value, 0)


def split_options(opts: dict[str, Any], own: Sequence[str], scorer: str) -> dict[str, Any]:
    """Keep the options this scorer takes; drop None values; refuse the others clearly."""
    out = {}
    for k, v in opts.items():
        if v is None:
            continue
        if k not in own:
            raise ModelError(f"the {scorer} scorer does not take the option {k!r}")
        out[k] = v
    return out
