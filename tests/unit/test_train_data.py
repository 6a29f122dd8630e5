"""The keep-model's training data (train/, issue 31): the labels validate, the manifest lists exactly the labelled
documents, every cell has its documents, no forbidden source appears, and the hygiene scan refuses a copied eval
passage while letting stock wording through. The texts themselves are not in the repository (train.fetch
rebuilds them from the fetched snapshots), so nothing here reads them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from catp import Pruner
from train.check import FORBIDDEN, eval_windows, shared_passage
from train.corpus import MANIFEST, manifest_rows, read_labels
from train.keep_model import unit_targets
from train.sources import load_all

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def records():
    return read_labels()


def test_labels_cover_every_domain_and_language(records):
    assert len(records) >= 300
    cells = Counter((r.domain, r.lang) for r in records)
    assert set(cells) == {(d, lang) for d in ("legal", "finance", "medical") for lang in ("zh", "en")}
    assert min(cells.values()) >= 40, cells
    assert len({r.id for r in records}) == len(records) and len({r.sha256 for r in records}) == len(records)


def test_the_manifest_lists_exactly_the_labelled_documents(records):
    rows = [json.loads(line) for line in MANIFEST.read_text(encoding="utf-8").splitlines()]
    assert rows == manifest_rows(records), "run python -m train.fetch --manifest"
    assert all(row["repo"] and row["path"] and row["split"] and len(row["sha256"]) == 64 for row in rows)


def test_no_forbidden_source_and_every_extractor_is_registered(records):
    extractors = load_all()
    for r in records:
        assert not FORBIDDEN.search(r.source.repo) and not FORBIDDEN.search(r.source.path), r.id
        assert r.source.extractor in extractors, r.id
        assert not r.id.startswith(("cuad", "tatqa-dev", "tatqa-test")), r.id


def test_quotes_are_short_and_tiered(records):
    for r in records:
        assert {f.tier for f in r.facts} <= {"must", "should"}
        quoted = sum(len(f.quote) for f in r.facts)
        assert quoted <= 0.4 * r.chars, r.id


def test_the_hygiene_scan_refuses_a_copied_passage_but_not_stock_wording():
    windows = eval_windows()
    contract = (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")
    copied = "Some new text of our own about a lease.\n" + contract[2000:2600] + "\nMore of our own text."
    assert "contract_en.txt" in shared_passage(copied, windows, strict=False)
    stock = ("A new announcement of our own, with a divider line.\n" + "-" * 200 + "\n"
             + contract[2000:2100] + "\n" + "Our own closing words about results for the quarter. " * 20)
    assert shared_passage(stock, windows, strict=False) is None
    assert "contract_en.txt" in shared_passage(stock, windows, strict=True)  # a corpus an eval set comes from


def test_unit_targets_mark_the_units_that_hold_the_quotes():
    text = ("The Licensee shall pay a royalty of 6% of Net Sales. The parties met in Paris. "
            "Either party may terminate on ninety days' notice. The weather was fine.")
    doc = Pruner(domain="legal").analyse(text, budget=5)
    quotes = []
    for quote, tier in (("royalty of 6% of Net Sales", 2), ("terminate on ninety days' notice", 1)):
        start = text.index(quote)
        quotes.append((start, start + len(quote), tier))
    y, weight = unit_targets(text, quotes, doc)
    kept_text = " ".join(text[u.start : u.end] for u, k in zip(doc.units, y) if k)
    assert "royalty of 6%" in kept_text and "ninety days" in kept_text
    assert "Paris" not in kept_text and "weather" not in kept_text
    assert max(weight) == 2.0
