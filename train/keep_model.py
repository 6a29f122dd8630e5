"""Train the CPU keep-model from the expert keep-labels.

    python -m train.fetch                         # texts first (train/data/texts.jsonl)
    python -m train.keep_model --out catp/models/keep           # the shipped model, on every label file
    python -m train.keep_model --out /tmp/k --exclude cail2019  # leave one corpus out

A unit (catp's own units: clauses, sentences, headings, rows) is a positive when the expert's quotes cover at
least a third of its non-space characters, or it holds at least half of one quote; `must` positives weigh twice.
The model is an L2 logistic regression (scikit-learn's liblinear, at training time only) over
catp.scoring.keep_features; its weights go to keep.npz and its card to keep.json (catp.scoring.keep loads them).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from catp.scoring.keep import FORMAT
from catp.scoring.keep_features import NGRAMS, gram_counts, neighbours, text_buckets, unit_bounds, unit_features
from train.corpus import TEXTS, LabelRecord, corpus_of, load_texts, read_labels

HASH_BITS = 18
MIN_NAMED_COUNT = 3  # a named feature seen in fewer training units is left out
C = 0.3  # inverse L2 strength, and the views below: chosen by leave-one-corpus-out unit AUC on the training
VIEWS_USED = ("self",)  # labels alone (train.crossval); the neighbours' and section's n-grams lowered it
COVERED_SHARE, QUOTE_SHARE, MUST_WEIGHT = 1 / 3, 0.5, 2.0
# select takes units by p ** POWER per token (catp.select.keep): leave-one-training-corpus-out, facts kept at 1/6
# were 0.206 at power 1, 0.237 at 2, 0.235 at 4 (python -m train.crossval --power 1 --power 2 --power 4)
POWER = 2.0

@dataclass
class Example:
    record: LabelRecord
    doc: object  # catp.document.Document (the analysis of the text)
    y: np.ndarray  # per unit 0/1
    weight: np.ndarray  # per unit sample weight


def _nonspace(text: str) -> np.ndarray:
    return np.array([not c.isspace() for c in text], dtype=bool)


def quote_spans(text: str, record: LabelRecord) -> list[tuple[int, int, int]]:
    """(start, end, tier) of each fact's quote at its first occurrence; tier 2 for `must`, 1 for `should`."""
    found = []
    for fact in record.facts:
        at = text.find(fact.quote)
        if at >= 0:
            found.append((at, at + len(fact.quote), 2 if fact.tier == "must" else 1))
    return found


def unit_targets(text: str, quotes: list[tuple[int, int, int]], doc) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: 1 when the quotes cover a third of it or it holds half of a quote; weight 2 for `must`."""
    solid = _nonspace(text)
    covered = np.zeros(len(text), dtype=np.int8)  # 0 none, 1 should, 2 must
    for start, end, tier in quotes:
        covered[start:end] = np.maximum(covered[start:end], tier)
    solid_sum = np.concatenate(([0], np.cumsum(solid)))
    cover_sum = np.concatenate(([0], np.cumsum((covered > 0) & solid)))
    must_sum = np.concatenate(([0], np.cumsum((covered == 2) & solid)))
    n = len(doc.units)
    y, weight = np.zeros(n), np.ones(n)
    for i, unit in enumerate(doc.units):
        size = solid_sum[unit.end] - solid_sum[unit.start]
        inside = cover_sum[unit.end] - cover_sum[unit.start]
        holds = any(min(e, unit.end) - max(s, unit.start) >= QUOTE_SHARE * (e - s) for s, e, _ in quotes)
        if size and (inside >= COVERED_SHARE * size or holds):
            y[i] = 1
            if must_sum[unit.end] - must_sum[unit.start] > 0:
                weight[i] = MUST_WEIGHT
    return y, weight


def analyse_all(records: list[LabelRecord], texts: dict[str, str]) -> list[Example]:
    from catp.pipeline import Pruner

    pruners: dict[str, Pruner] = {}
    examples = []
    for record in records:
        pruner = pruners.setdefault(record.domain, Pruner(domain=record.domain))
        text = texts[record.id]
        doc = pruner.analyse(text, ratio="1/6")
        y, weight = unit_targets(text, quote_spans(text, record), doc)
        examples.append(Example(record, doc, y, weight))
    return examples


def gram_matrix(doc, bits: int):
    """Units x buckets: each unit's n-gram counts over sqrt(their number), as keep_features.view_scores reads."""
    from scipy import sparse

    starts, ends = unit_bounds(doc)
    scale = 1.0 / np.sqrt(np.maximum(gram_counts(starts, ends), 1.0))
    rows, cols = [], []
    for n, where in text_buckets(doc.text, bits).items():
        position = np.arange(len(where))
        unit = np.searchsorted(starts, position, side="right") - 1
        ok = (unit >= 0) & (position + n <= ends[np.maximum(unit, 0)]) & (position >= starts[np.maximum(unit, 0)])
        rows.append(unit[ok])
        cols.append(where[ok])
    row, col = np.concatenate(rows), np.concatenate(cols)
    matrix = sparse.csr_matrix((scale[row], (row, col)), shape=(len(starts), 2 ** bits))
    matrix.sum_duplicates()
    return matrix


def design(examples: list[Example], bits: int, views=VIEWS_USED, vocabulary: dict[str, int] | None = None):
    """The training matrix: each view's n-gram block, then the named features; and the vocabulary."""
    from scipy import sparse

    named = [unit_features(e.doc) for e in examples]
    if vocabulary is None:
        counts: dict[str, int] = {}
        for per_doc in named:
            for names in per_doc:
                for name in names:
                    counts[name] = counts.get(name, 0) + 1
        vocabulary = {name: i for i, name in enumerate(sorted(k for k, v in counts.items() if v >= MIN_NAMED_COUNT))}
    blocks = []
    for example, per_doc in zip(examples, named):
        own = gram_matrix(example.doc, bits)
        padded = sparse.vstack([own, sparse.csr_matrix((1, own.shape[1]))]).tocsr()  # row -1: no neighbour
        prev, nxt, section = neighbours(example.doc)
        whose = {"self": None, "prev": prev, "next": nxt, "section": section}
        blocks_of_views = [own if whose[v] is None else padded[np.where(whose[v] >= 0, whose[v], own.shape[0])]
                           for v in views]
        rows, cols = [], []
        for i, names in enumerate(per_doc):
            for name in names:
                if name in vocabulary:
                    rows.append(i)
                    cols.append(vocabulary[name])
        named_block = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(own.shape[0], len(vocabulary)))
        blocks.append(sparse.hstack(blocks_of_views + [named_block]).tocsr())
    return sparse.vstack(blocks).tocsr(), vocabulary


def fit(examples: list[Example], bits: int = HASH_BITS, c: float = C, views=VIEWS_USED):
    from sklearn.linear_model import LogisticRegression

    matrix, vocabulary = design(examples, bits, views)
    y = np.concatenate([e.y for e in examples])
    weight = np.concatenate([e.weight for e in examples])
    model = LogisticRegression(C=c, solver="liblinear", max_iter=200)
    model.fit(matrix, y, sample_weight=weight)
    coef = model.coef_[0]
    size = 2 ** bits
    tables = coef[: len(views) * size].reshape(len(views), size).astype(np.float32)
    named = coef[len(views) * size :].astype(np.float32)
    named[vocabulary["bias"]] += model.intercept_[0]
    return tables, named, vocabulary


def save(folder: Path, tables: np.ndarray, named: np.ndarray, vocabulary: dict[str, int], card: dict,
         views=VIEWS_USED) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, tables=tables, named=named)
    data = buffer.getvalue()
    (folder / "keep.npz").write_bytes(data)
    card = {"format": FORMAT, "version": 1, "hash_bits": int(np.log2(tables.shape[1])), "ngrams": list(NGRAMS),
            "views": list(views), "named_features": sorted(vocabulary, key=vocabulary.get),
            "weights_sha256": hashlib.sha256(data).hexdigest(), **card}
    (folder / "keep.json").write_text(json.dumps(card, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


CHECK_DOCUMENTS = {"examples/contract_en.txt": "legal", "examples/medical_zh.txt": "medical"}


def check_values(folder: Path) -> dict:
    """The saved model's probabilities for the first units of two shipped examples, which the card keeps so
    that a test can tell a model that loads but scores differently (tests/unit/scoring/test_keep_model.py)."""
    from catp.pipeline import Pruner
    from catp.scoring.keep import KeepModel

    model, root, found = KeepModel.load(folder), Path(__file__).resolve().parent.parent, {}
    for name, domain in CHECK_DOCUMENTS.items():
        doc = Pruner(domain=domain).analyse((root / name).read_text(encoding="utf-8"), ratio="1/6")
        p = model.probabilities(doc)
        found[name] = {"domain": domain, "units": len(p), "first": [round(float(v), 6) for v in p[:12]]}
    return found


def auc(y: np.ndarray, score: np.ndarray) -> float:
    order = np.argsort(score, kind="stable")
    ranks = np.empty(len(score))
    ranks[order] = np.arange(1, len(score) + 1)
    positives = y == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    if not n_pos or not n_neg:
        return float("nan")
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.keep_model", description=__doc__.splitlines()[0])
    parser.add_argument("labels", nargs="*", type=Path, help="label files (default: train/labels/*.jsonl)")
    parser.add_argument("--out", type=Path, required=True, help="folder for keep.npz and keep.json")
    parser.add_argument("--exclude", action="append", default=[], help="a corpus to leave out (repeatable)")
    parser.add_argument("--c", type=float, default=C)
    parser.add_argument("--bits", type=int, default=HASH_BITS)
    parser.add_argument("--texts", type=Path, default=TEXTS, help="the texts train.fetch wrote")
    args = parser.parse_args(argv)
    records = [r for r in read_labels(args.labels or None) if corpus_of(r) not in args.exclude]
    texts = load_texts(args.texts)
    started = time.perf_counter()
    examples = analyse_all(records, texts)
    tables, named, vocabulary = fit(examples, args.bits, args.c)
    units = sum(len(e.y) for e in examples)
    positives = int(sum(e.y.sum() for e in examples))
    by_corpus: dict[str, int] = {}
    for r in records:
        by_corpus[corpus_of(r)] = by_corpus.get(corpus_of(r), 0) + 1
    card = {"trained_on": {"documents": len(records), "units": units, "positive_units": positives,
                           "by_corpus": dict(sorted(by_corpus.items())), "excluded": sorted(args.exclude),
                           "manifest": "train/manifest.jsonl"},
            "selection": {"power": POWER},
            "training": {"c": args.c, "solver": "liblinear", "min_named_count": MIN_NAMED_COUNT,
                         "covered_share": COVERED_SHARE, "quote_share": QUOTE_SHARE, "must_weight": MUST_WEIGHT}}
    save(args.out, tables, named, vocabulary, card)
    card["check"] = check_values(args.out)
    save(args.out, tables, named, vocabulary, card)
    print(f"{len(records)} documents, {units} units ({positives} positive), {len(vocabulary)} named features; "
          f"{time.perf_counter() - started:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
