"""The shipped keep-model (catp/models/keep, issue 31): it loads, its hash is checked, it scores the two
documents its card names as the card says, and pruning with it keeps the promises every prune keeps (ordered
extract, budget, determinism) with reasons that name the model. Nothing is trained here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from catp import Pruner
from catp.errors import ModelError
from catp.scoring.keep import MODEL_DIR, KeepModel, KeepScorer

ROOT = Path(__file__).resolve().parents[3]
CONTRACT = (ROOT / "examples/contract_en.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def keep_pruner() -> Pruner:
    return Pruner(domain="legal", scorer="keep")


def test_shipped_model_scores_the_cards_documents_as_the_card_says():
    model = KeepModel.load()
    card = json.loads((MODEL_DIR / "keep.json").read_text(encoding="utf-8"))
    assert (MODEL_DIR / "keep.npz").stat().st_size < 30_000_000
    assert len(card["check"]) == 2
    for name, expected in card["check"].items():
        doc = Pruner(domain=expected["domain"]).analyse((ROOT / name).read_text(encoding="utf-8"), ratio="1/6")
        p = model.probabilities(doc)
        assert len(p) == expected["units"]
        assert p[: len(expected["first"])].tolist() == pytest.approx(expected["first"], abs=1e-5)
        assert 0.0 < p.min() and p.max() < 1.0


def test_a_changed_weights_file_is_refused(tmp_path):
    folder = tmp_path / "keep"
    shutil.copytree(MODEL_DIR, folder)
    data = bytearray((folder / "keep.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / "keep.npz").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="sha256"):
        KeepModel.load(folder)
    with pytest.raises(ModelError, match="cannot read"):
        KeepModel.load(tmp_path / "missing")


def test_keep_pruning_is_an_ordered_extract_in_budget_that_names_the_model(keep_pruner):
    first = keep_pruner.prune(CONTRACT, ratio="1/6")
    again = keep_pruner.prune(CONTRACT, ratio="1/6")
    assert first.text == again.text
    assert first.stats.output_tokens <= first.stats.budget
    assert first.stats.scorer == "keep"
    spans = first.kept
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    assert all(CONTRACT[span.start : span.end] in first.text for span in spans)
    assert all(span.reasons[0].startswith("keep-model p=") for span in spans)
    lexical = Pruner(domain="legal").prune(CONTRACT, ratio="1/6")
    assert lexical.text != first.text  # the model chose, not the lexical ranking


def test_with_a_question_the_keep_scorer_ranks_as_the_lexical_one(keep_pruner):
    question = "What is the liability cap?"
    lexical = Pruner(domain="legal").prune(CONTRACT, ratio="1/6", question=question)
    assert keep_pruner.prune(CONTRACT, ratio="1/6", question=question).text == lexical.text


def test_keep_scorer_options(tmp_path):
    assert isinstance(KeepScorer.from_options(model=str(MODEL_DIR)), KeepScorer)
    with pytest.raises(ModelError, match="only a model folder"):
        KeepScorer.from_options(url="http://127.0.0.1:9")


def test_cli_prunes_with_the_keep_scorer_and_refuses_a_missing_model(tmp_path):
    source = tmp_path / "c.txt"
    source.write_text(CONTRACT, encoding="utf-8")
    base = [sys.executable, "-m", "catp", "prune", str(source), "--domain", "legal", "--ratio", "1/6", "--scorer",
            "keep"]
    done = subprocess.run([*base, "--format", "json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kept"][0]["reasons"][0].startswith("keep-model p=")
    bad = subprocess.run([*base, "--scorer-model", str(tmp_path / "nothing")], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr and "keep-model" in bad.stderr
