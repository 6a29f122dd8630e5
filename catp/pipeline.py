"""`Pruner`: the front of the engine (catp.engine: decode -> detect -> ... -> render), reusable across
documents; `prune()`: one document, with the Pruner cached."""

from __future__ import annotations

import gc
import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path

from catp import engine
from catp.config import DEFAULTS
from catp.arguments import check_encoding, check_pruner_arguments, positive_timeout
from catp.cost import MarkerMerge, cost_units
from catp.decode import DEFAULT_MAX_BYTES, Decoded, decode_input, has_lone_surrogates, read_input
from catp.document import Document
from catp.engine import AnalysisCache, StageHook, empty_output_warning, parse_ratio
from catp.errors import CatpError, InputError
from catp.result import PruneResult
from catp.rules.guard import pruning
from catp.rules.loader import LoadedRuleSet, load_rule_files, rule_files
from catp.rules.catalog import resolve
from catp.rules.registry import RuleRegistry
from catp.rules.schema import SelectionPolicy, merged_policy
from catp.scoring.base import Scorer
from catp.scoring.registry import build_scorer
from catp.tokens import TokenCounter, load_token_counter

__all__ = ["DEFAULT_GAP_MARKER", "Pruner", "clear_prune_cache", "cost_units", "empty_output_warning", "parse_ratio",
           "prune", "prune_cache_size", "with_input"]

DEFAULT_GAP_MARKER = DEFAULTS.gap_marker


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

    Per call, `domain=` overrides the Pruner's own (None: the Pruner's; "auto": detected), so one Pruner (one LM)
    serves every domain; `on_stage(name, seconds)` is told each stage's time (the stages: `catp.engine`).

    Threads: one Pruner may serve `prune` and `analyse` from many threads at once, with the results a lone
    caller gets (the caches it fills are shared and hold the same values whoever fills them), and so do
    `prune_bytes` and `prune_file` (decode returns its warnings with the text, not as Python warnings).
    The regex timeout counts each thread's own CPU time between searches, but the process's within one
    search: on a busy many-core server give `regex_timeout` room. Processes: a Pruner pickles (for
    multiprocessing pools, Ray) with its rules, tokenizer and scorer, without its cache of analysed texts.
    """

    def __init__(self, domain: str | None = DEFAULTS.domain,
                 rules: str | Path | list[str | Path] | tuple = DEFAULTS.rules,
                 tokenizer: str | TokenCounter | None = DEFAULTS.tokenizer, scorer: str | Scorer | None = DEFAULTS.scorer,
                 gap_marker: str = DEFAULTS.gap_marker, *, cue_window_tokens: int | None = DEFAULTS.cue_window_tokens,
                 regex_timeout: float = DEFAULTS.regex_timeout, question_share: float = DEFAULTS.question_share,
                 scorer_options: dict | None = DEFAULTS.scorer_options) -> None:
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
        self.marker_merge = MarkerMerge(self.tokens, gap_marker)
        self.gap_tokens = self.marker_merge.gap_tokens
        self.cue_window_tokens = cue_window_tokens
        self.regex_timeout = positive_timeout("regex_timeout", regex_timeout)
        self.question_share = question_share
        self._registries: dict[str, RuleRegistry] = {}
        self._policies: dict[tuple[str, str], SelectionPolicy] = {}
        self.analyses = AnalysisCache()
        # the user's rule files, parsed once (and failing fast when bad): every domain's rule set, and their
        # `detect` keywords for --domain auto
        self.user_rules = load_rule_files(rules)
        self.user_rulesets = [item.ruleset for item in self.user_rules]
        if self.domain is not None:
            self.registry(self.domain)  # fail fast on a bad domain

    def __getstate__(self) -> dict:
        """Pickled (multiprocessing pools, Ray) with its rules, tokenizer and scorer, without the cache of
        analysed texts."""
        state = self.__dict__.copy()
        state["analyses"] = AnalysisCache()
        return state

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

    def call_domain(self, domain: str | None) -> str | None:
        """The domain a call prunes with: the Pruner's own for None, detected per text for "auto" (returned as
        None), else `domain`. Raises RuleError for a domain no rule set names."""
        if domain is None:
            return self.domain
        if domain == "auto":
            return None
        if not isinstance(domain, str):
            raise CatpError(f"domain must be a str (legal, finance, medical, general, auto) or None, got {domain!r}")
        self.registry(domain)  # fail fast on a bad domain
        return domain

    def prune_bytes(self, data: bytes, *, encoding: str | None = None, **kwargs) -> PruneResult:
        """Decode `data` and prune it: `prune`'s keywords. A PDF, DOCX or HTML file (told by its first bytes)
        is pruned as its extracted text (pip install 'catp[formats]'); other bytes are decoded (BOM, UTF-8,
        else detected; `encoding` overrides, for text and HTML). Raises InputError for empty, binary or
        undecodable bytes."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InputError(f"data must be bytes, got {type(data).__name__} (use Pruner.prune for text)")
        return self._prune_read(lambda: decode_input(bytes(data), encoding=encoding), kwargs)

    def prune_file(self, path: str | Path, *, encoding: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                   **kwargs) -> PruneResult:
        """Read a text, PDF, DOCX or HTML file ('-': stdin) and prune it, as `prune_bytes`."""
        return self._prune_read(lambda: read_input(str(path), encoding=encoding, max_bytes=max_bytes), kwargs)

    def _prune_read(self, read, kwargs: dict) -> PruneResult:
        call = engine.Call(read=read)
        engine.run(engine.DECODE, self, call, kwargs.get("on_stage"))
        return with_input(self.prune(call.text, encoding=call.encoding, **kwargs), call.decoded)

    def prune(self, text: str, *, budget: int | None = None, ratio: float | str | None = None,
              question: str | None = None, encoding: str | None = None, domain: str | None = None,
              on_stage: StageHook | None = None) -> PruneResult:
        """Prune `text` to `budget` tokens, or to `ratio` of its tokens ("1/6", 0.25): give one of them.

        With a `question`, the text most relevant to it is kept first. `encoding` is only reported in
        the stats. `domain` overrides the Pruner's for this call (None: the Pruner's; "auto": detected). `on_stage`
        is called with each stage's name and seconds. Returns a PruneResult: the extract (`text`), the kept
        spans with the rules that kept them, the protected spans the budget forced out, and stats. The output
        never exceeds the budget. Raises InputError (text not a non-empty str) or BudgetError (no budget,
        both, or a bad value).
        """
        with _gc_paused():
            doc = self.analyse(text, question=question, encoding=encoding, budget=budget, ratio=ratio,
                               domain=domain, on_stage=on_stage)
            return self.finish(doc, on_stage=on_stage)

    def clear_cache(self) -> None:
        """Forget analysed texts (they are reused when the same text is pruned again)."""
        self.analyses.clear()

    def analyse(self, text: str, *, budget: int | None = None, ratio: float | str | None = None,
                question: str | None = None, encoding: str | None = None, domain: str | None = None,
                on_stage: StageHook | None = None) -> Document:
        """Run every stage up to render and return the Document (with decisions) — for evals and
        `--format html`; `finish` renders it."""
        if not isinstance(text, str):
            raise InputError("text must be a str (decode bytes with Pruner.prune_bytes)")
        if not text.strip():
            raise InputError("the input is empty")
        if has_lone_surrogates(text):
            raise InputError("the text holds lone surrogates (not valid Unicode); decode bytes with Pruner.prune_bytes")
        if question is not None and not isinstance(question, str):
            raise InputError(f"the question must be a str, got {type(question).__name__}")
        check_encoding(encoding)
        call = engine.Call(text=text, encoding=encoding, domain=self.call_domain(domain), question=question,
                           budget=budget, ratio=ratio)
        with _gc_paused(), pruning():
            return engine.analyse(self, call, on_stage)

    def finish(self, doc: Document, *, on_stage: StageHook | None = None) -> PruneResult:
        """Render an analysed Document (from `analyse`) as a PruneResult."""
        call = engine.Call(doc=doc)
        engine.run(engine.RENDER, self, call, on_stage)
        return call.result


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


def prune(text: str, *, domain: str | None = None, budget: int | None = None, ratio: float | str | None = None,
          rules: str | Path | list[str | Path] | tuple | None = None, tokenizer: str | None = None,
          question: str | None = None, scorer: str | Scorer | None = None) -> PruneResult:
    """One-shot pruning: `Pruner(rules=, tokenizer=, scorer=).prune(text, budget=, ratio=, question=, domain=)`,
    with the Pruner cached for these arguments, whatever the domain (the last PRUNER_CACHE_SIZE of them); a rule
    file edited on disk
    since (another modification time or size) gets a new Pruner. For many documents, build a `Pruner` once and
    reuse it. Raises a `catp.errors.CatpError` subclass (InputError, BudgetError, RuleError, ...) for bad input."""
    pruner = _cached_pruner(rule_files(rules), tokenizer, scorer)
    return pruner.prune(text, budget=budget, ratio=ratio, question=question, domain=domain)


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


def _cached_pruner(rules: list, tokenizer, scorer) -> Pruner:
    """The Pruner for these arguments, built once: the cache keeps the last PRUNER_CACHE_SIZE used. One lock
    around it: threads calling prune() share the cache, and their first calls build one Pruner, not one each
    (rules, tokenizer, and an LM scorer's model)."""
    key = (tuple(_rule_file_key(r) for r in rules), tokenizer,
           scorer if isinstance(scorer, (str, type(None))) else id(scorer))
    with _PRUNERS_LOCK:
        pruner = _PRUNERS.get(key)
        if pruner is None:
            pruner = Pruner(rules=rules, tokenizer=tokenizer, scorer=scorer or "lexical")
            _PRUNERS[key] = pruner
            while len(_PRUNERS) > PRUNER_CACHE_SIZE:
                _PRUNERS.popitem(last=False)
        else:
            _PRUNERS.move_to_end(key)
        return pruner


def prune_cache_size() -> int:
    """How many Pruners prune() holds now (at most PRUNER_CACHE_SIZE)."""
    with _PRUNERS_LOCK:
        return len(_PRUNERS)


def clear_prune_cache() -> None:
    """Forget prune()'s Pruners (the next call builds one again)."""
    with _PRUNERS_LOCK:
        _PRUNERS.clear()
