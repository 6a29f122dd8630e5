"""The engine: every stage a prune goes through, as small named functions in one list, in order.

    decode -> detect -> tokens -> segment -> annotate -> terms -> cost -> score -> select -> verify -> render
     bytes    Analysis (text, lang, domain, units, spans,       Document (the Analysis + budget,  PruneResult
     -> text  columns, term index, unit costs): cached per text  scores, decisions): per call

A stage is `stage(parts, call)`: `parts` is the `catp.pipeline.Pruner` (its rules, tokenizer, scorer and
settings, loaded once), `call` the `Call` it reads and fills in. The analysis stages (detect .. cost) run once
per text and domain: their `Analysis` is cached and shared, read-only, by every later call on the same text.
`on_stage(name, seconds)`, when given, is called after every stage that ran (benchmarks/stages.py times them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral
from typing import TYPE_CHECKING

from catp.annotate import annotate as annotate_units
from catp.cost import cost_units
from catp.decode import Decoded
from catp.detect import detect_domain, detect_langs
from catp.document import Analysis, Decision, Document
from catp.errors import BudgetError
from catp.render import dropped_warning, extract_text, kept_spans, protected_report
from catp.result import KeptSpan, PruneResult, PruneStats
from catp.rules.schema import SelectionPolicy
from catp.scoring.base import rank_map
from catp.scoring.lexical import LexicalScorer, index_terms
from catp.segment import segment as segment_units
from catp.segment.clauses import clause_units
from catp.select import Selection, drop_bare_runs, question_first, runs
from catp.select import select as select_units
from catp.select.coverage import find_key_sections
from catp.select.keep import select_by_probability

if TYPE_CHECKING:
    from catp.pipeline import Pruner

StageHook = Callable[[str, float], None]


@dataclass(slots=True)
class Call:
    """One call on its way through the stages: what was asked, and what the stages made of it so far."""

    text: str = ""
    read: Callable[[], Decoded] | None = None  # decode's input: bytes or a file, read when it runs
    decoded: Decoded | None = None
    encoding: str | None = None
    domain: str | None = None  # None: detected from the text
    question: str | None = None
    budget: int | None = None  # as given: a budget or a ratio
    ratio: float | str | None = None
    started: float = 0.0
    langs: set[str] = field(default_factory=set)
    policy: SelectionPolicy | None = None
    analysis: Analysis | None = None
    doc: Document | None = None
    selection: Selection | None = None
    kept: list[bool] = field(default_factory=list)
    result: PruneResult | None = None


def decode(parts: Pruner, call: Call) -> None:
    """bytes or a file -> text (PDF, DOCX and HTML by their text), with decode's warnings."""
    call.decoded = call.read()
    call.text, call.encoding = call.decoded.text, call.decoded.encoding


def detect(parts: Pruner, call: Call) -> None:
    """The text's languages, and its domain unless the call or the Pruner names one."""
    lang, call.langs = detect_langs(call.text)
    domain = call.domain or detect_domain(call.text, parts.user_rulesets)
    call.analysis = Analysis(text=call.text, lang=lang, domain=domain)


def tokens(parts: Pruner, call: Call) -> None:
    """Where each token of the budget's tokenizer starts."""
    call.analysis.token_starts = parts.tokens.token_starts(call.text)


def segment(parts: Pruner, call: Call) -> None:
    """Units: clauses, headings, list items, table rows."""
    analysis = call.analysis
    call.policy = parts.policy(analysis.domain, analysis.lang)
    segment_units(analysis, split_parentheses=call.policy.split_parentheses)
    if call.policy.clause_units:
        clause_units(analysis)


def annotate(parts: Pruner, call: Call) -> None:
    """The rules' spans, each unit's priority, rules, value and group; the key sections."""
    analysis, policy = call.analysis, call.policy
    annotate_units(analysis, parts.registry(analysis.domain), analysis.token_starts, langs=call.langs,
                   regex_timeout=parts.regex_timeout, whole_span_chars=policy.whole_span_chars,
                   category_weights=policy.category_weights,
                   whole_span_max_tokens=policy.whole_span_max_tokens)
    analysis.key_sections = find_key_sections(analysis, policy)


def terms(parts: Pruner, call: Call) -> None:
    """Each unit's content terms, and their weight (idf) in the text."""
    index_terms(call.analysis)


def cost(parts: Pruner, call: Call) -> None:
    """Each unit's price in budget tokens (catp.cost)."""
    cost_units(call.analysis, call.analysis.token_starts, parts.marker_merge)


def score(parts: Pruner, call: Call) -> None:
    """The scorer's worth of each live unit (none when the whole text fits). A costly scorer sees only what the
    rules left undecided (all units when a question must rank them); the others get lexical scores."""
    doc = call.doc
    if doc.input_tokens <= doc.budget:
        return
    scorer, question = parts.scorer, call.question
    deleted, priority = doc.columns.deleted, doc.columns.priority
    live = [i for i in range(len(doc.units)) if not deleted[i]]
    undecided = [i for i in live if priority[i] == 0]
    cheap = getattr(scorer, "cheap", False)
    candidates = live if (cheap or question) else undecided
    doc.scores = scorer.score(doc, candidates, question=question or None, budget_tokens=doc.budget)
    missing = [i for i in live if i not in doc.scores]
    if missing:  # protected units still need an information score to rank among themselves
        lexical = LexicalScorer().score(doc, live)
        if not cheap:  # the model's order of the units it scored, on the lexical scale of the others' scores
            doc.scores = rank_map(doc.scores, [lexical[i] for i in doc.scores])  # (and of the policy's weights)
        doc.scores.update((i, lexical[i]) for i in missing)


def select(parts: Pruner, call: Call) -> None:
    """Which units to keep, by the policy's estimate of their cost (all of them when the text fits)."""
    doc = call.doc
    if doc.input_tokens <= doc.budget:  # the whole text fits (input_tokens is one exact encode)
        call.kept = [True] * len(doc.units)
        return
    policy = parts.policy(doc.domain, doc.lang)
    if call.question:
        call.selection = question_first(doc, doc.budget, parts.gap_tokens, parts.question_share, policy)
    elif getattr(parts.scorer, "mode", None) == "value":  # the keep-model: P ** power is a unit's value
        doc.probabilities = [doc.scores.get(i, 0.0) for i in range(len(doc.units))]
        call.selection = select_by_probability(doc, doc.budget, parts.gap_tokens, policy, parts.scorer.power)
    elif getattr(parts.scorer, "mode", None) == "mix":  # the rules' ranking, each unit's density times P ** power
        doc.probabilities = parts.scorer.probabilities(doc).tolist()
        factor = [p ** parts.scorer.power for p in doc.probabilities]
        call.selection = select_units(doc, doc.budget, parts.gap_tokens, policy, factor)
    else:
        call.selection = select_units(doc, doc.budget, parts.gap_tokens, policy)
    call.kept = call.selection.kept


def verify(parts: Pruner, call: Call) -> None:
    """The exact count of the extract decides: the last units added go until it fits. Then each unit's
    decision, with the rules that kept it."""
    doc, kept, selection = call.doc, call.kept, call.selection
    while selection is not None:  # the estimate is per unit; the exact count decides
        drop_bare_runs(doc, kept)
        units = doc.units  # the extract's pieces, as kept_spans() gives them
        pieces = [(units[first].start, units[last].end) for first, last in runs(kept)]
        over = parts.tokens.count_joined(doc.text, doc.token_starts, pieces, parts.gap_marker) - doc.budget
        if over <= 0:
            break
        removed = 0
        while removed < over and selection.added:
            i = selection.added.pop()
            kept[i] = False
            removed += max(doc.units[i].tokens, 1)
    rules, priority, unit_score = doc.columns.rules, doc.columns.priority, doc.scores.get
    doc.decisions = [Decision(k, (rules[i] or ["score"]) if k else [], priority[i], unit_score(i, 0.0))
                     for i, k in enumerate(kept)]


def render(parts: Pruner, call: Call) -> None:
    """The extract, its kept spans with their reasons, the protected spans it lost, and the stats."""
    doc = call.doc
    input_tokens, budget = doc.input_tokens, doc.budget
    kept = [d.kept for d in doc.decisions]
    if all(kept) and input_tokens <= budget:  # else: the units, without the edges' whitespace
        spans = [KeptSpan(start=0, end=len(doc.text), reasons=["within budget"])]
        text = doc.text
    else:
        p = doc.probabilities
        chose = None if p is None else lambda first, last: parts.scorer.reason(max(p[first : last + 1]))
        spans = kept_spans(doc, kept, chose)
        text = extract_text(doc, spans, parts.gap_marker)
    dropped, per_category = protected_report(doc, spans)
    warnings = list(doc.warnings)
    if dropped:
        warnings.append(dropped_warning(doc, kept, dropped, budget))
    if not text and doc.text.strip():
        warnings.append(empty_output_warning(doc, budget))
    output_tokens = parts.tokens.count(text)
    scorer = parts.scorer
    stats = PruneStats(
        input_tokens=input_tokens, output_tokens=output_tokens, budget=budget,
        ratio=round(output_tokens / input_tokens, 6) if input_tokens else 1.0,
        tokenizer=parts.tokens.name, elapsed_s=round(time.perf_counter() - doc.started, 6), lang=doc.lang,
        domain=doc.domain, encoding=doc.encoding, scorer=getattr(scorer, "name", type(scorer).__name__),
        units_total=len(doc.units), units_kept=sum(kept), per_category=per_category,
    )
    call.result = PruneResult(text=text, gap_marker=parts.gap_marker, kept=spans, dropped_protected=dropped,
                              warnings=warnings, stats=stats)


def empty_output_warning(doc: Document, budget: int) -> str:
    """Why the output is empty: no piece of the text fits the budget (a text without sentence marks is cut
    only at line ends and every max_unit_chars characters), the pieces that fit hold no letter, digit or emoji, or the
    rules deleted all of it."""
    costs = [u.tokens for u, deleted in zip(doc.units, doc.columns.deleted) if not deleted]
    if not costs:
        return "the output is empty: the rules deleted all of the text as boilerplate"
    if min(costs) <= budget:  # drop_bare_runs: a run with no letter, digit or emoji says nothing
        return (f"the output is empty: the pieces of the text that fit the budget of {budget} tokens hold no "
                "letter, digit or emoji")
    return (f"the output is empty: no piece of the text fits the budget of {budget} tokens (the smallest of its "
            f"{len(costs)} pieces costs {min(costs)} tokens); give a larger budget")


DECODE = [("decode", decode)]
ANALYSIS_STAGES = [("detect", detect), ("tokens", tokens), ("segment", segment), ("annotate", annotate),
                   ("terms", terms), ("cost", cost)]
CHOICE_STAGES = [("score", score), ("select", select), ("verify", verify)]
RENDER = [("render", render)]
STAGES = [*DECODE, *ANALYSIS_STAGES, *CHOICE_STAGES, *RENDER]  # the order, in one list
STAGE_NAMES = [name for name, _ in STAGES]


def run(stages: list, parts: Pruner, call: Call, on_stage: StageHook | None = None) -> None:
    """Run `stages` in order on `call`, telling `on_stage` each one's seconds."""
    if on_stage is None:
        for _, stage in stages:
            stage(parts, call)
        return
    clock = time.perf_counter
    for name, stage in stages:
        began = clock()
        stage(parts, call)
        on_stage(name, clock() - began)


def analyse(parts: Pruner, call: Call, on_stage: StageHook | None = None) -> Document:
    """Stages detect .. verify: the analysis (from the cache when the text was analysed for this domain
    already), the call's budget, then score, select and verify. Returns the Document with its decisions."""
    call.started = time.perf_counter()
    cached = parts.analyses.get(call.text, call.domain)
    if cached is None:
        run(ANALYSIS_STAGES, parts, call, on_stage)
        parts.analyses.put(call.text, call.domain, call.analysis.seal())
    else:
        call.analysis = cached
    analysis = call.analysis
    input_tokens = len(analysis.token_starts)
    call.doc = Document.of(analysis, encoding=call.encoding, input_tokens=input_tokens,
                           budget=call_budget(input_tokens, call.budget, call.ratio), started=call.started)
    run(CHOICE_STAGES, parts, call, on_stage)
    return call.doc


def call_budget(input_tokens: int, budget: int | None, ratio: float | str | None) -> int:
    """The budget in tokens: `budget` as given, or `ratio` of the input's tokens."""
    if budget is not None and ratio is not None:
        raise BudgetError("give a budget or a ratio, not both")
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, Integral) or budget < 0:  # numpy's ints too
            raise BudgetError(f"budget must be a whole number of tokens >= 0, got {budget!r}")
        return int(budget)
    if ratio is None:
        raise BudgetError("give a budget (tokens) or a ratio (e.g. 1/6)")
    return int(parse_ratio(ratio) * input_tokens)


def parse_ratio(value: str | float) -> float:
    """'1/6', '0.25' or 0.25 -> float in (0, 1]."""
    try:
        ratio = float(Fraction(str(value).strip()))
    except (ValueError, ZeroDivisionError) as exc:
        raise BudgetError(f"invalid ratio {value!r}; use a fraction like 1/6 or a decimal like 0.25") from exc
    if not 0 < ratio <= 1:
        raise BudgetError(f"ratio must be in (0, 1], got {value!r}")
    return ratio


class AnalysisCache:
    """The last few analyses, by text and requested domain: asking several questions of one document, or
    pruning it to several budgets, analyses it once."""

    def __init__(self, size: int = 3) -> None:
        self.size = size
        self.entries: list[tuple[str, str | None, Analysis]] = []

    def get(self, text: str, domain: str | None) -> Analysis | None:
        return next((a for t, d, a in self.entries if (t is text or t == text) and d == domain), None)

    def put(self, text: str, domain: str | None, analysis: Analysis) -> None:
        self.entries = [(text, domain, analysis), *self.entries[: self.size - 1]]

    def clear(self) -> None:
        self.entries = []

    def __len__(self) -> int:
        return len(self.entries)
