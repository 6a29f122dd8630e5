"""Text with NUL characters (PDF extractions, C strings in logs) is refused as binary by detection;
the message's advice, --encoding, then reads it, NULs kept as they are (offsets refer to the text)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from catp.errors import InputError
from catp.pipeline import Pruner

ROOT = Path(__file__).resolve().parents[3]
TEXT = "The fee is $5,000.\x00 Payment is due on 2024-01-02.\x00\x00 The parties are Acme Inc. and Beta LLC.\n" * 10


def test_given_an_encoding_text_with_nuls_is_read():
    pruner = Pruner()
    with pytest.raises(InputError, match="--encoding"):
        pruner.prune_bytes(TEXT.encode(), budget=40)
    result = pruner.prune_bytes(TEXT.encode(), budget=40, encoding="utf-8")
    assert result.text == pruner.prune(TEXT, budget=40).text and result.stats.encoding == "utf-8"


def test_the_cli_follows_its_own_advice(tmp_path):
    path = tmp_path / "nul.txt"
    path.write_bytes(TEXT.encode())

    def prune(*extra):
        return subprocess.run([sys.executable, "-m", "catp", "prune", str(path), "--budget", "40", "-f", "json",
                               *extra], capture_output=True, text=True, cwd=ROOT, timeout=300)

    refused = prune()
    assert refused.returncode == 2 and "give --encoding" in refused.stderr
    read = prune("--encoding", "utf-8")
    assert read.returncode == 0, read.stderr
    out = json.loads(read.stdout)
    assert out["kept"] and out["text"] == " … ".join(TEXT[k["start"]:k["end"]] for k in out["kept"])
