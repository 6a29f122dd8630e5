"""`Pruner`: decode -> segment -> annotate -> score -> select -> render, reusable across documents."""

from __future__ import annotations

import gc
import os
import threading
import time
from bisect import bisect_left
from collections import OrderedDict
from contextlib import contextmanager
from fractions import Fraction
from numbers import Integral
from pathlib import Path

from catp.arguments import check_encoding, check_pruner_arguments, positive_timeout
from catp.annotate import annotate
from catp.decode import DEFAULT_MAX_BYTES, Decoded, decode_input, has_lone_surrogates, read_input
from catp.detect import detect_domain, detect_langs
from catp.document import Analysis, Decision, Document
from catp.errors import BudgetError, CatpError, InputError
from catp.render import dropped_warning, extract_text, kept_spans, protected_report
from catp.result import KeptSpan, PruneResult, PruneStats
from catp.rules.guard import pruning
from catp.rules.loader import LoadedRuleSet, load_rule_files, resolve, rule_files
from catp.rules.registry import RuleRegistry
from catp.rules.schema import SelectionPolicy, merged_policy
from catp.scoring.base import Scorer, rank_map
from catp.scoring.lexical import LexicalScorer, index_terms
from catp.scoring.registry import build_scorer
from catp.segment import segment
from catp.select import drop_bare_runs, question_first, runs, select
from catp.select.coverage import find_key_sections
from catp.tokens import TokenCounter, load_token_counter

DEFAULT_GAP_MARKER = " … "


def parse_ratio(value: str | float) -> float:
    """'1/6', '0.25' or 0.25 -> float in (0, 1]."""
    try:
        ratio = float(Fraction(str(value).strip()))
    except (ValueError, ZeroDivisionError) as exc:
        raise BudgetError(f"invalid ratio {value!r}; use a fraction like 1/6 or a decimal like 0.25") from exc
    if not 0 < ratio <= 1:
        raise BudgetError(f"ratio must be in (0, 1], got {value!r}")
    return ratio


class Pruner:
    """Loads rules, tokenizer and scorer once; `prune()` many documents.

    domain: "legal", "finance", "medical", "general", the `name` of one of `rules` (a domain of the user's
    own: common rules and `rules`), or None / "auto" (detected per document, from the built-in files' and
    `rules`' `detect` keywords). rules: extra rule files (YAML), applied after the built-in ones (with any
    domain); a single path is accepted too, and so are files already loaded (`catp.rules.loader.load_file`).
    Each file is read and validated once, when the Pruner is built: a file edited later counts from the
    next Pruner on.
    tokenizer: the budget's tokenizer: a tokenizer.json, a folder holding one, a Hugging Face id, or a
    TokenCounter; None is Qwen's BPE. scorer: "lexical" (default), "lm", "vllm", "auto" or a Scorer,
    with `scorer_options` for it (model, url, device, ...). gap_marker: put between non-adjacent kept
    pieces (counted in the budget). cue_window_tokens: tokens kept after but/however/但是 (1-4096).
    regex_timeout: CPU seconds per rule and document (None or inf: no timeout). question_share: with a question, the share of
    the budget the most relevant units take first.

    Raises RuleError (bad rule file or domain), TokenizerError, ModelError or CatpError (bad scorer,
    gap marker or cue window); every error is a `catp.errors.CatpError`.

    Threads: one Pruner may serve `prune` and `analyse` from many threads at once, with the results a lone
    caller gets (the caches it fills are shared and hold the same values whoever fills them), and so do
    `prune_bytes` and `prune_file` (decode returns its warnings with the text, not as Python warnings).
    The regex timeout counts each thread's own CPU time between searches, but the process's within one
    search: on a busy many-core server give `regex_timeout` room. Processes: a Pruner pickles (for
    multiprocessing pools, Ray) with its rules, tokenizer and scorer, without its cache of analysed texts.
    """

    def __init__(self, domain: str | None = None, rules: str | Path | list[str | Path] | tuple = (),
                 tokenizer: str | TokenCounter | None = None, scorer: str | Scorer | None = "lexical",
                 gap_marker: str = DEFAULT_GAP_MARKER, *, cue_window_tokens: int | None = None,
                 regex_timeout: float = 2.0, question_share: float = 0.8, scorer_options: dict | None = None) -> None:
        check_pruner_arguments(domain=domain, rules=rules, tokenizer=tokenizer, scorer=scorer,
                               cue_window_tokens=cue_window_tokens, question_share=question_share,
                               scorer_options=scorer_options)
        if not isinstance(gap_marker, str):
            raise CatpError(f"the gap marker must be a str, got {gap_marker!r}")
        if has_lone_surrogates(gap_marker):  # e.g. bytes that are not UTF-8 on the command line
            raise CatpError(f"the gap marker {gap_marker!r} holds lone surrogates (not valid UTF-8)")
        self.domain = None if domain in (None, "auto") else domain
        self.tokens = tokenizer if isinstance(tokenizer, TokenCounter) else load_token_counter(
            str(tokenizer) if isinstance(tokenizer, Path) else tokenizer)
        self.scorer = build_scorer(scorer, **(scorer_options or {}))
        self.gap_marker = gap_marker
        self.gap_tokens = self.tokens.count(gap_marker)
        self.cue_window_tokens = cue_window_tokens
        self.regex_timeout = positive_timeout("regex_timeout", regex_timeout)
        self.question_share = question_share
        self._registries: dict[str, RuleRegistry] = {}
        self._policies: dict[tuple[str, str], SelectionPolicy] = {}
        self._prepared: list[tuple[str, Document, int]] = []
        self._merges: dict[str, int] = {}
        # the user's rule files, parsed once (and failing fast when bad): every domain's rule set, and their
        # `detect` keywords for --domain auto
        self.user_rules = load_rule_files(rules)
        self._user_rulesets = [item.ruleset for item in self.user_rules]
        if self.domain is not None:
            self.registry(self.domain)  # fail fast on a bad domain

    def __getstate__(self) -> dict:
        """Pickled (multiprocessing pools, Ray) with its rules, tokenizer and scorer, without the cache of
        analysed texts."""
        state = self.__dict__.copy()
        state["_prepared"] = []
        return state

    def _marker_merge(self, char: str) -> int:
        """How many tokens the gap marker followed by `char` saves on the two counted apart (Qwen: 1 for a
        letter or a mark, which takes the marker's last space into its token; 0 for a digit)."""
        merge = self._merges.get(char)
        if merge is None:
            merge = self._merges[char] = (self.gap_tokens + self.tokens.count(char)
                                          - self.tokens.count(self.gap_marker + char))
        return merge

    def registry(self, domain: str) -> RuleRegistry:
        if domain not in self._registries:
            self._registries[domain] = RuleRegistry(resolve(domain, self.user_rules),
                                                    cue_window_tokens=self.cue_window_tokens)
        return self._registries[domain]

    def policy(self, domain: str, lang: str) -> SelectionPolicy:
        """The selection policy the rule sets give for this domain and language."""
        key = (domain, lang)
        if key not in self._policies:
            self._policies[key] = merged_policy([item.ruleset for item in self.registry(domain).loaded], lang)
        return self._policies[key]

    def prune_bytes(self, data: bytes, *, encoding: str | None = None, **kwargs) -> PruneResult:
        """Decode `data` and prune it: `prune`'s keywords. A PDF, DOCX or HTML file (told by its first bytes)
        is pruned as its extracted text (pip install 'catp[formats]'); other bytes are decoded (BOM, UTF-8,
        else detected; `encoding` overrides, for text and HTML). Raises InputError for empty, binary or
        undecodable bytes."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InputError(f"data must be bytes, got {type(data).__name__} (use Pruner.prune for text)")
        return self._prune_decoded(decode_input(bytes(data), encoding=encoding), kwargs)

    def prune_file(self, path: str | Path, *, encoding: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                   **kwargs) -> PruneResult:
        """Read a text, PDF, DOCX or HTML file ('-': stdin) and prune it, as `prune_bytes`."""
        return self._prune_decoded(read_input(str(path), encoding=encoding, max_bytes=max_bytes), kwargs)

    def _prune_decoded(self, decoded: Decoded, kwargs: dict) -> PruneResult:
        return with_input(self.prune(decoded.text, encoding=decoded.encoding, **kwargs), decoded)

    def prune(self, text: str, *, budget: int | None = None, ratio: float | str | None = None,
              question: str | None = None, encoding: str | None = None) -> PruneResult:
        """Prune `text` to `budget` tokens, or to `ratio` of its tokens ("1/6", 0.25): give one of them.

        With a `question`, the text most relevant to it is kept first. `encoding` is only reported in
        the stats. Returns a PruneResult: the extract (`text`), the kept spans with the rules that kept
        them, the protected spans the budget forced out, and stats. The output never exceeds the budget.
        Raises InputError (text not a non-empty str) or BudgetError (no budget, both, or a bad value).
        """
        with _gc_paused():
            doc = self.analyse(text, question=question, encoding=encoding, budget=budget, ratio=ratio)
            return self.finish(doc)

    def clear_cache(self) -> None:
        """Forget analysed texts (they are reused when the same text is pruned again)."""
        self._prepared = []

    def analyse(self, text: str, *, budget: int | None = None, ratio: float | str | None = None,
                question: str | None = None, encoding: str | None = None) -> Document:
        """Run every stage and return the Document (with decisions) — for evals and `--format html`."""
        if not isinstance(text, str):
            raise InputError("text must be a str (decode bytes with Pruner.prune_bytes)")
        if not text.strip():
            raise InputError("the input is empty")
        if has_lone_surrogates(text):
            raise InputError("the text holds lone surrogates (not valid Unicode); decode bytes with Pruner.prune_bytes")
        if question is not None and not isinstance(question, str):
            raise InputError(f"the question must be a str, got {type(question).__name__}")
        check_encoding(encoding)
        with _gc_paused(), pruning():
            return self._analyse(text, budget=budget, ratio=ratio, question=question, encoding=encoding)

    def _analyse(self, text: str, *, budget: int | None, ratio: float | str | None, question: str | None,
                 encoding: str | None) -> Document:
        started = time.perf_counter()
        doc, n_tokens = self._prepare(text, encoding)
        doc_budget = self._budget(n_tokens, budget, ratio)
        doc.input_tokens, doc.budget, doc.started = n_tokens, doc_budget, started
        if n_tokens <= doc_budget:  # the whole text fits (n_tokens is one exact encode): nothing to rank
            kept = [True] * len(doc.units)
        else:
            self._score(doc, question, doc_budget)
            kept = self._select(doc, doc_budget, question)
        rules, priority, score = doc.columns.rules, doc.columns.priority, doc.scores.get
        doc.decisions = [Decision(k, (rules[i] or ["score"]) if k else [], priority[i], score(i, 0.0))
                         for i, k in enumerate(kept)]
        return doc

    # -- stages ------------------------------------------------------------------------------

    def _prepare(self, text: str, encoding: str | None) -> tuple[Document, int]:
        """decode is done; segment, annotate and cost the units. The last few documents are
        cached, so asking several questions of one document analyses it once."""
        cached = next((c for c in self._prepared if c[0] is text or c[0] == text), None)
        if cached is None:
            lang, langs = detect_langs(text)
            domain = self.domain or detect_domain(text, self._user_rulesets)
            doc = Analysis(text=text, lang=lang, domain=domain)
            token_starts = self.tokens.token_starts(text)
            policy = self.policy(domain, lang)
            segment(doc, split_parentheses=policy.split_parentheses)
            annotate(doc, self.registry(domain), token_starts, langs=langs, regex_timeout=self.regex_timeout,
                     whole_span_chars=policy.whole_span_chars, category_weights=policy.category_weights)
            _cost_units(doc, token_starts, self._marker_merge)
            doc.key_sections = find_key_sections(doc, policy)
            doc.token_starts = token_starts
            index_terms(doc)
            cached = (text, doc, len(token_starts))
            self._prepared = [cached, *self._prepared[:2]]
        _, analysis, n_tokens = cached
        return Document.of(analysis, encoding=encoding), n_tokens

    def _budget(self, input_tokens: int, budget: int | None, ratio: float | str | None) -> int:
        if budget is not None and ratio is not None:
            raise BudgetError("give a budget or a ratio, not both")
        if budget is not None:
            if isinstance(budget, bool) or not isinstance(budget, Integral) or budget < 0:  # numpy's ints too
                raise BudgetError(f"budget must be a whole number of tokens >= 0, got {budget!r}")
            return int(budget)
        if ratio is None:
            raise BudgetError("give a budget (tokens) or a ratio (e.g. 1/6)")
        return int(parse_ratio(ratio) * input_tokens)

    def _score(self, doc: Document, question: str | None, budget: int) -> None:
        deleted, priority = doc.columns.deleted, doc.columns.priority
        live = [i for i in range(len(doc.units)) if not deleted[i]]
        undecided = [i for i in live if priority[i] == 0]
        cheap = isinstance(self.scorer, LexicalScorer)
        # A costly scorer sees only what the rules left undecided (all units when a question must rank them).
        candidates = live if (cheap or question) else undecided
        doc.scores = self.scorer.score(doc, candidates, question=question or None, budget_tokens=budget)
        missing = [i for i in live if i not in doc.scores]
        if missing:  # protected units still need an information score to rank among themselves
            lexical = LexicalScorer().score(doc, live)
            if not cheap:  # the model's order of the units it scored, on the lexical scale of the others' scores
                doc.scores = rank_map(doc.scores, [lexical[i] for i in doc.scores])  # (and of the policy's weights)
            doc.scores.update((i, lexical[i]) for i in missing)

    def _select(self, doc: Document, budget: int, question: str | None) -> list[bool]:
        policy = self.policy(doc.domain, doc.lang)
        if question:
            selection = question_first(doc, budget, self.gap_tokens, self.question_share, policy)
        else:
            selection = select(doc, budget, self.gap_tokens, policy)
        kept = selection.kept
        while True:  # the estimate is per unit; the exact count decides
            drop_bare_runs(doc, kept)
            units = doc.units  # the extract's pieces, as kept_spans() gives them
            pieces = [(units[first].start, units[last].end) for first, last in runs(kept)]
            over = self.tokens.count_joined(doc.text, doc.token_starts, pieces, self.gap_marker) - budget
            if over <= 0:
                return kept
            removed = 0
            while removed < over and selection.added:
                i = selection.added.pop()
                kept[i] = False
                removed += max(doc.units[i].tokens, 1)

    def finish(self, doc: Document) -> PruneResult:
        """Render an analysed Document (from `analyse`) as a PruneResult."""
        input_tokens, budget, started = doc.input_tokens, doc.budget, doc.started
        kept = [d.kept for d in doc.decisions]
        if all(kept) and doc.input_tokens <= budget:  # else: the units, without the edges' whitespace
            spans = [KeptSpan(start=0, end=len(doc.text), reasons=["within budget"])]
            text = doc.text
        else:
            spans = kept_spans(doc, kept)
            text = extract_text(doc, spans, self.gap_marker)
        dropped, per_category = protected_report(doc, spans)
        warnings = list(doc.warnings)
        if dropped:
            warnings.append(dropped_warning(doc, kept, dropped, budget))
        if not text and doc.text.strip():
            warnings.append(empty_output_warning(doc, budget))
        output_tokens = self.tokens.count(text)
        stats = PruneStats(
            input_tokens=input_tokens, output_tokens=output_tokens, budget=budget,
            ratio=round(output_tokens / input_tokens, 6) if input_tokens else 1.0,
            tokenizer=self.tokens.name, elapsed_s=round(time.perf_counter() - started, 6), lang=doc.lang,
            domain=doc.domain, encoding=doc.encoding, scorer=getattr(self.scorer, "name", type(self.scorer).__name__),
            units_total=len(doc.units), units_kept=sum(kept), per_category=per_category,
        )
        return PruneResult(text=text, gap_marker=self.gap_marker, kept=spans, dropped_protected=dropped,
                           warnings=warnings, stats=stats)


def empty_output_warning(doc: Document, budget: int) -> str:
    """Why the output is empty: no piece of the text fits the budget (a text without sentence marks is cut
    only at line ends and every max_unit_chars characters), the pieces that fit hold no letter or digit, or the
    rules deleted all of it."""
    costs = [u.tokens for u, deleted in zip(doc.units, doc.columns.deleted) if not deleted]
    if not costs:
        return "the output is empty: the rules deleted all of the text as boilerplate"
    if min(costs) <= budget:  # drop_bare_runs: a run with no letter or digit says nothing
        return (f"the output is empty: the pieces of the text that fit the budget of {budget} tokens hold no "
                "letter or digit")
    return (f"the output is empty: no piece of the text fits the budget of {budget} tokens (the smallest of its "
            f"{len(costs)} pieces costs {min(costs)} tokens); give a larger budget")


def with_input(result: PruneResult, decoded: Decoded) -> PruneResult:
    """`result` of pruning `decoded.text`, saying what the input was: its format in the stats, decode's
    warnings (bad UTF-8 replaced, pages without text) first among its warnings."""
    result.stats.input_format = decoded.format
    result.warnings[:0] = decoded.warnings
    return result


@contextmanager
def _gc_paused():
    """CPython's cyclic GC paused while a document is pruned. A 128K-token document allocates some 10^5
    small objects (units, spans, term lists) that form no cycles; the collector still walked all of
    them and every other live object, twice per prune in full: 9-14% of the CPU time. Whatever cycles
    there are get collected once it runs again (only the outermost call turns it back on).
    The objects the prune allocated and kept (the cached analysis, the result) would then all be walked
    by the next young collection, and again by the middle one: they go straight to the oldest
    generation instead (gc.freeze + unfreeze moves every tracked object there without walking any),
    unless the process keeps frozen objects of its own (then unfreeze would release them)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def _cost_units(doc: Document, token_starts: list[int], marker_merge) -> None:
    """Each unit owns the tokens that start in it or in the whitespace before it: those starting at or
    after the previous unit's end and before its own (found by bisecting the sorted token starts).
    A run of kept units in the output does not start with that whitespace: the unit's `edge` is what its
    first unit then saves, the tokens starting in the whitespace less one when the last of them runs into
    the unit (" Bar": the unit still needs a token for "Bar"), or -1 when a token of the unit before runs
    into it. `marker_merge(c)` says whether the gap marker's last token joins a first character c."""
    before, end = 0, 0  # tokens starting before the previous unit's end; that end
    n = len(token_starts)
    text = doc.text
    for unit in doc.units:
        # Each search looks at the next few starts only (a token holds at least one of the text's UTF-8
        # bytes, at most 4 per character), and at the rest if its answer is the stretch's end: at 1M
        # tokens, searches over the whole list miss the caches at every step.
        start = unit.start
        hi = min(before + 4 * (start - end) + 1, n)
        first = bisect_left(token_starts, start, before, hi)  # its first token starting in the unit
        if first == hi < n:
            first = bisect_left(token_starts, start, hi)
        end = unit.end
        hi = min(first + 4 * (end - start) + 1, n)
        upto = bisect_left(token_starts, end, first, hi)
        if upto == hi < n:
            upto = bisect_left(token_starts, end, hi)
        unit.tokens = upto - before
        unit.edge = first - before - (first == n or token_starts[first] != start)
        unit.marker_merge = marker_merge(text[start])
        before = upto


def prune(text: str, *, domain: str | None = None, budget: int | None = None, ratio: float | str | None = None,
          rules: str | Path | list[str | Path] | tuple | None = None, tokenizer: str | None = None,
          question: str | None = None, scorer: str | Scorer | None = None) -> PruneResult:
    """One-shot pruning: `Pruner(domain, rules, tokenizer, scorer).prune(text, budget=, ratio=, question=)`,
    with the Pruner cached for these arguments (the last PRUNER_CACHE_SIZE of them); a rule file edited on disk
    since (another modification time or size) gets a new Pruner. For many documents, build a `Pruner` once and
    reuse it. Raises a `catp.errors.CatpError` subclass (InputError, BudgetError, RuleError, ...) for bad input."""
    pruner = _cached_pruner(domain, rule_files(rules), tokenizer, scorer)
    return pruner.prune(text, budget=budget, ratio=ratio, question=question)


PRUNER_CACHE_SIZE = 8  # prune()'s Pruners kept, the most recently used
_PRUNERS: OrderedDict[tuple, Pruner] = OrderedDict()
_PRUNERS_LOCK = threading.Lock()


def _rule_file_key(rule) -> tuple:
    """What prune()'s cache knows a rule file by: the path given, and the file's identity on disk (resolved path,
    inode, modification time, size), so that a file edited since is read again. A file that cannot be stat'ed
    gets no identity: the Pruner then raises what it always did (RuleError: no such rule file, ...). A file
    already loaded is its object (the cached Pruner holds it, so its id names no other while cached)."""
    if isinstance(rule, LoadedRuleSet):
        return ("loaded", id(rule))
    name = str(rule)
    try:
        st = os.stat(name)
        return (name, os.path.realpath(name), st.st_ino, st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):  # missing, unreadable, a NUL in the name
        return (name, None)


def _cached_pruner(domain, rules: list, tokenizer, scorer) -> Pruner:
    """The Pruner for these arguments, built once: the cache keeps the last PRUNER_CACHE_SIZE used. One lock
    around it: threads calling prune() share the cache, and their first calls build one Pruner, not one each
    (rules, tokenizer, and an LM scorer's model)."""
    key = (domain, tuple(_rule_file_key(r) for r in rules), tokenizer,
           scorer if isinstance(scorer, (str, type(None))) else id(scorer))
    with _PRUNERS_LOCK:
        pruner = _PRUNERS.get(key)
        if pruner is None:
            pruner = Pruner(domain=domain, rules=rules, tokenizer=tokenizer, scorer=scorer or "lexical")
            _PRUNERS[key] = pruner
            while len(_PRUNERS) > PRUNER_CACHE_SIZE:
                _PRUNERS.popitem(last=False)
        else:
            _PRUNERS.move_to_end(key)
        return pruner
