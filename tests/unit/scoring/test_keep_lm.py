"""The GPU tier of the keep-model (`--scorer keep-lm`, catp/scoring/keep_lm.py) on the real Gemma 3 270M GGUF and
the shipped adapter, run on the CPU: it loads, refuses a changed adapter, scores the card's document as the card
says, and prunes within the budget with reasons that name it. Nothing is trained here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from catp import Pruner  # noqa: E402
from catp.errors import ModelError  # noqa: E402
from catp.scoring import keep_lm  # noqa: E402
from catp.scoring.keep_lm import ADAPTER, ADAPTER_SHA256, KeepLMScorer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
CARD = json.loads((ADAPTER.parent / "card.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def scorer() -> KeepLMScorer:
    return KeepLMScorer(device="cpu")


def test_the_card_names_the_shipped_adapter():
    assert CARD["adapter"]["sha256"] == ADAPTER_SHA256
    assert ADAPTER.stat().st_size < 30_000_000


@pytest.mark.slow
def test_keep_lm_scores_the_cards_document_as_the_card_says(scorer):
    check = CARD["check"]
    text = (ROOT / check["document"]).read_text(encoding="utf-8")[: check["chars"]]
    doc = Pruner(domain=check["domain"]).analyse(text, ratio="1/6")
    p = scorer.probabilities(doc)
    assert len(p) == check["units"]
    assert p[: len(check["first"])].tolist() == pytest.approx(check["first"], abs=2e-3)


@pytest.mark.slow
def test_keep_lm_prunes_within_the_budget_and_names_itself(scorer):
    text = (ROOT / "examples/contract_en.txt").read_text(encoding="utf-8")[:6000]
    pruner = Pruner(domain="legal", scorer=scorer)
    first, again = pruner.prune(text, ratio="1/4"), pruner.prune(text, ratio="1/4")
    assert first.text == again.text and 0 < first.stats.output_tokens <= first.stats.budget
    assert all(span.reasons[0].startswith("keep-lm p=") for span in first.kept)


def test_a_changed_adapter_is_refused(tmp_path, monkeypatch):
    changed = tmp_path / "adapter.safetensors"
    shutil.copyfile(ADAPTER, changed)
    with changed.open("r+b") as f:
        f.seek(-100, 2)
        f.write(b"\x00" * 8)
    monkeypatch.setattr(keep_lm, "ADAPTER", changed)
    with pytest.raises(ModelError, match="sha256"):
        KeepLMScorer(device="cpu")
