"""Head truncation and middle-out, measured in non-whitespace characters at 1/6, reproduce the
table in ../shared/evals-data/README.md within 0.02 (this pins the baseline definitions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.baselines import HeadTruncation, MiddleOut
from evals.loaders import load_jsonl
from evals.methods import Budget
from evals.metrics import KeptIndex
from evals.sizing import CharSize

SHARED = Path(__file__).resolve().parents[3] / "shared" / "evals-data"

# set file, kind (None = all), head, middle-out: from the shared README
README = [
    ("cuad", None, 0.34, 0.33), ("cuad", "clause", 0.17, 0.15), ("cuad", "amount", 0.09, 0.08),
    ("cail2019_cjrc", None, 0.20, 0.19), ("ccks2017_cner", None, 0.72, 0.77),
    ("tatqa", None, 0.27, 0.23), ("e3c_en", None, 0.26, 0.27),
]


def shares(set_name: str, kind: str | None) -> tuple[float, float]:
    [data] = load_jsonl(SHARED / f"{set_name}.dev.jsonl")
    hits, total = [0, 0], 0
    for doc in data.docs:
        size = CharSize(doc.text)
        budget = Budget("chars", size.total / 6)
        gold = [g for g in doc.gold if kind in (None, g.kind)]
        total += len(gold)
        for i, method in enumerate((HeadTruncation(), MiddleOut())):
            out = method.run(doc.text, budget, size)
            kept = KeptIndex(size.prefix, out.kept, out.text)
            hits[i] += sum(kept.is_kept(g.start, g.end, g.quote) for g in gold)
    return hits[0] / total, hits[1] / total


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared dev sets not present at ../shared/evals-data")
@pytest.mark.parametrize("set_name, kind, head, middle", README)
def test_baselines_agree_with_the_shared_readme(set_name, kind, head, middle):
    got_head, got_middle = shares(set_name, kind)
    assert got_head == pytest.approx(head, abs=0.02)
    assert got_middle == pytest.approx(middle, abs=0.02)
