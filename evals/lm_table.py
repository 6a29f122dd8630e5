"""LM scores computed on another machine (a GPU), replayed in an eval on this one.

An eval of `--scorer lm` on whole documents needs millions of scorer tokens; a 270M model on two
busy CPU cores does ~50 tokens/s. So the model work is done where a GPU is, and the eval replays it:

1. `record`: run the eval with the `lm-record` scorer. It asks nothing of a model: it stores every
   document's scorer token ids and every question-aware request (unit slices + question ids) in a
   requests file (`.npz`), and gives the fallback scores.
2. `compute` (on the GPU, `python -m evals.lm_table compute ...`): `LMScorer` (the library's own code,
   engine hf) computes each document's per-token surprisal (`token_nll`: windows of 4096 tokens,
   every token with >= 1024 tokens of left context) and the mean question surprisal of every
   recorded question-aware sequence, into a table (`.npz`).
3. `replay`: run the same eval with the `lm-table` scorer, which reads the table.

Plain mode replays `token_nll` of the whole document: each token is scored once with >= `overlap`
tokens of context, as in a live run, but window boundaries may differ from those a live run plans for
its candidates only, so a token's surprisal may differ slightly. Question mode replays the exact
sequences. Set CATP_LM_TABLE (the table, or the requests file when recording) and CATP_LM_TOKENIZER
(the scorer model's folder or tokenizer.json).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

from catp.scoring.logprobs import SelfInformationScorer, leading_special_token
from catp.scoring.model_source import load_tokenizer


def doc_key(ids) -> str:
    return hashlib.sha1(np.asarray(ids, dtype=np.int32).tobytes()).hexdigest()[:20]


def seqs_key(seqs, starts) -> str:
    h = hashlib.sha1()
    for s, m in zip(seqs, starts):
        h.update(np.asarray([len(s), m, *s], dtype=np.int32).tobytes())
    return h.hexdigest()[:20]


def _tokenizer():
    path = Path(os.environ["CATP_LM_TOKENIZER"])
    if path.is_dir():
        return load_tokenizer(path)
    return load_tokenizer(path.parent) if path.name == "tokenizer.json" else load_tokenizer(path)


class _TableBase(SelfInformationScorer):
    def __init__(self, **opts):
        super().__init__(window=4096, overlap=1024, **{k: v for k, v in opts.items() if k in ("aggregate",)})
        self.tokenizer = _tokenizer()
        self.bos_id = leading_special_token(self.tokenizer)
        self.max_len = 1 << 20
        self._doc = None

    @classmethod
    def from_options(cls, **opts):
        return cls(**opts)

    def _score_selfinfo(self, ids, todo, tranges, stats):
        self._doc = ids
        return super()._score_selfinfo(ids, todo, tranges, stats)

    def _score_question(self, ids, todo, tranges, question, stats):
        self._doc = ids
        return super()._score_question(ids, todo, tranges, question, stats)


class RecordingScorer(_TableBase):
    """Stores what a live LM scorer would ask; gives nan (so every unit gets the fallback)."""

    name = "lm-record"

    def __init__(self, **opts):
        super().__init__(**opts)
        self.path = Path(os.environ["CATP_LM_TABLE"])
        self.docs: dict[str, np.ndarray] = {}
        self.seqs: dict[str, tuple[str, list, list]] = {}
        self._calls = 0
        self._written: set[str] = set()  # keys already in a part file
        self._parts = 0
        import atexit
        from multiprocessing import util

        atexit.register(self._flush)
        # an eval worker (--jobs > 1) leaves through multiprocessing, which skips atexit but runs these
        util.Finalize(None, self._flush, exitpriority=100)

    def _nll_windows(self, ids, windows, needed):
        self.record_document(ids)
        return [float("nan")] * len(ids)

    def record_document(self, ids) -> None:
        """Store a document's token ids (a plain-mode request)."""
        self.docs.setdefault(doc_key(ids), np.asarray(ids, dtype=np.int32))
        self._tick()

    def _score_question(self, ids, todo, tranges, question, stats):
        """Record the request compactly: the question's ids and each unit's slice of the document
        (the sequences are `[q] + [ids[lo:hi] + q ...]`, as the base class builds them)."""
        from catp.scoring.logprobs import question_suffix

        q_ids = list(self.tokenizer.encode(question_suffix(question, self.question_template),
                                           add_special_tokens=False).ids)
        room = min(self.window, self.max_len) - len(q_ids)
        slices = [(max(a, b - room), b) for c in todo for a, b in [tranges[c]] if b > a]
        key = doc_key(ids)
        self.docs.setdefault(key, np.asarray(ids, dtype=np.int32))
        self.seqs.setdefault(f"{key}_{len(self.seqs)}", (key, q_ids, slices))
        self._tick()
        return {}

    def _tick(self) -> None:
        self._calls += 1
        if self._calls % 100 == 0:
            self._flush()

    def _flush(self) -> None:
        """Part files `<stem>.<pid>.<n>.npz`, each with the requests new since the last one: written every
        100 requests and at exit (a question may name a document stored in an earlier part)."""
        out = {f"doc_{k}": v for k, v in self.docs.items() if f"doc_{k}" not in self._written}
        for k, (dk, q_ids, slices) in self.seqs.items():
            if f"q_{k}" not in self._written:
                out[f"q_{k}"] = np.asarray([len(q_ids), *q_ids, *[x for sl in slices for x in sl]], dtype=np.int32)
        if not out:
            return
        self._written.update(out)
        np.savez_compressed(self.path.with_name(f"{self.path.stem}.{os.getpid()}.{self._parts}.npz"), **out)
        self._parts += 1


class TableScorer(_TableBase):
    """Replays a table written by `compute`."""

    name = "lm-table"

    def __init__(self, **opts):
        super().__init__(**opts)
        self.table = load_tables(os.environ["CATP_LM_TABLE"])

    def score(self, doc, candidates, *, question=None, budget_tokens=None):
        """With a question and CATP_LM_BLEND=w (0..1): the LM relevance's rank and the lexical scorer's
        rank (question-first), mixed w of lexical to 1 - w of LM (the "combined" figures)."""
        out = super().score(doc, candidates, question=question, budget_tokens=budget_tokens)
        blend = float(os.environ.get("CATP_LM_BLEND", "0") or 0)
        if not question or not blend or not out:
            return out
        from catp.scoring.lexical import LexicalScorer

        lex = LexicalScorer().score(doc, list(out), question=question)
        lm_rank, lex_rank = _ranks(out), _ranks(lex)
        return {c: (1 - blend) * lm_rank[c] + blend * lex_rank[c] for c in out}

    def _nll_windows(self, ids, windows, needed):
        return self.table[f"nll_{doc_key(ids)}"].astype(np.float64).tolist()

    def _nll_sequences(self, seqs, measure_from):
        return self.table[f"seq_{seqs_key(seqs, measure_from)}"].astype(np.float64).tolist()


def _ranks(scores: dict) -> dict:
    """Each key's rank in [0, 1] (ties keep one rank order: by score, then key)."""
    order = sorted(scores, key=lambda k: (scores[k], -k))
    n = max(len(order) - 1, 1)
    return {k: r / n for r, k in enumerate(order)}


def load_tables(paths: str) -> dict:
    """The tables named in CATP_LM_TABLE (several joined by os.pathsep)."""
    out = {}
    for p in paths.split(os.pathsep):
        data = np.load(p)
        out.update({k: data[k] for k in data.files})
    return out


def question_seqs(ids: list, packed: np.ndarray):
    """The sequences and measure-from positions of one recorded question request."""
    n = int(packed[0])
    q = packed[1:1 + n].tolist()
    flat = packed[1 + n:].tolist()
    seqs, starts = [q], [1]
    for lo, hi in zip(flat[0::2], flat[1::2]):
        seqs.append(ids[lo:hi] + q)
        starts.append(hi - lo + 1)
    return seqs, starts


def compute(requests: list[Path], model: str, out_dir: Path, plain: bool = True, deadline: float | None = None) -> None:
    """On the GPU: every recorded document's token surprisal and every sequence's mean, one table
    (`<group>.table.npz` in out_dir, float16 surprisal and float32 means) per group of requests files,
    written as each is done. A group is the name before the first dot: `qtat.123.0.npz` and
    `qtat.124.0.npz` are parts of group `qtat`; a question may name a document of another part.
    Groups are done in order of first appearance; with `deadline` (time.time()), none is started after it.
    bfloat16 on a GPU, float32 on a CPU (bfloat16 matmuls on a CPU are many times slower)."""
    import time

    import torch

    from catp.scoring.lm import LMScorer

    started = time.time()
    on_gpu = torch.cuda.is_available()
    scorer = LMScorer(model, device="cuda" if on_gpu else "cpu", engine="hf",
                      dtype="bfloat16" if on_gpu else "float32", max_tokens=None)
    if os.environ.get("CATP_LM_BOS"):  # the recording side's tokenizer adds this BOS (transformers < 5.24 drops it)
        scorer.bos_id = int(os.environ["CATP_LM_BOS"])
    print(f"loaded {model}: {time.time() - started:.1f} s, bos {scorer.bos_id}", flush=True)
    groups: dict[str, list[Path]] = {}
    for path in requests:
        groups.setdefault(path.name.split(".")[0], []).append(path)
    for name, paths in groups.items():
        if deadline is not None and time.time() > deadline:
            print(f"{name}: not started (deadline)", flush=True)
            continue
        data = {}
        for path in paths:
            with np.load(path) as part:
                data.update({k: part[k] for k in part.files})
        table, tokens, seqs = {}, 0, 0
        for k in data:
            if k.startswith("doc_") and plain:
                ids = data[k].tolist()
                table[f"nll_{k[4:]}"] = np.asarray(scorer.token_nll(ids), dtype=np.float16)
                tokens += len(ids)
            elif k.startswith("q_"):
                s, m = question_seqs(data[f"doc_{k[2:].split('_')[0]}"].tolist(), data[k])
                table[f"seq_{seqs_key(s, m)}"] = np.asarray(scorer._nll_sequences(s, m), dtype=np.float32)
                seqs += sum(len(x) for x in s)
        np.savez_compressed(out_dir / f"{name}.table.npz", **table)
        print(f"{name} ({len(paths)} files): {tokens} document tokens, {seqs} sequence tokens: "
              f"{time.time() - started:.1f} s", flush=True)


def register() -> None:
    from catp.scoring.registry import register_scorer

    register_scorer("lm-record", "evals.lm_table:RecordingScorer")
    register_scorer("lm-table", "evals.lm_table:TableScorer")


def main(argv: list[str]) -> int:
    """`python -m evals.lm_table eval ARGS` (python -m evals with the two scorers registered),
    or `python -m evals.lm_table compute OUT_DIR MODEL REQUESTS...`."""
    if argv and argv[0] == "compute":
        compute([Path(p) for p in argv[3:]], argv[2], Path(argv[1]))  # OUT_DIR MODEL REQUESTS...
        return 0
    register()
    from evals.__main__ import main as evals_main

    return evals_main(argv[1:] if argv and argv[0] == "eval" else argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
