"""evals/lm_table.py: the recorder's part files and compute's merge of a group's parts (tiny model, CPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from evals.lm_table import RecordingScorer, compute, doc_key, question_seqs, seqs_key  # noqa: E402


def test_recorder_parts_hold_every_request_once(tmp_path: Path, tiny_model_dir: Path, monkeypatch):
    monkeypatch.setenv("CATP_LM_TABLE", str(tmp_path / "rec.npz"))
    monkeypatch.setenv("CATP_LM_TOKENIZER", str(tiny_model_dir))
    rec = RecordingScorer()
    docs = [[i, i + 1, i + 2] for i in range(250)]
    for ids in docs:
        rec.record_document(ids)  # 100 and 200 requests write parts 0 and 1
    rec._flush()  # what exit writes: part 2, the last 50
    rec._flush()  # nothing new: no file
    parts = sorted(tmp_path.glob("rec.*.npz"))
    assert [p.name.split(".")[2] for p in parts] == ["0", "1", "2"]
    keys = [k for p in parts for k in np.load(p).files]
    assert len(keys) == len(set(keys)) == 250
    assert set(keys) == {f"doc_{doc_key(ids)}" for ids in docs}


def test_compute_merges_a_groups_parts(tmp_path: Path, tiny_model_dir: Path):
    """A question recorded in one part names a document stored in an earlier part of the same group."""
    ids = np.arange(5, 45, dtype=np.int32)
    key = doc_key(ids)
    packed = np.asarray([3, 7, 8, 9, 0, 10, 10, 25, 25, 40], dtype=np.int32)  # q ids, then unit slices
    np.savez_compressed(tmp_path / "g.1.0.npz", **{f"doc_{key}": ids})
    np.savez_compressed(tmp_path / "g.1.1.npz", **{f"q_{key}_0": packed})
    out = tmp_path / "out"
    out.mkdir()
    compute([tmp_path / "g.1.0.npz", tmp_path / "g.1.1.npz"], str(tiny_model_dir), out)
    table = np.load(out / "g.table.npz")
    seqs, starts = question_seqs(ids.tolist(), packed)
    assert len(seqs) == 4  # the bare question and three units
    assert sorted(table.files) == sorted([f"nll_{key}", f"seq_{seqs_key(seqs, starts)}"])
    assert table[f"nll_{key}"].shape == (len(ids),)
    assert np.isfinite(table[f"seq_{seqs_key(seqs, starts)}"]).all()
