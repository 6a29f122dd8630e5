"""UTF-8 with a few bad bytes: a Chinese file cut mid-character (`head -c`) or holding a stray byte is
read as UTF-8, the bad bytes replaced and reported, instead of refused as binary or read in a wrong code page."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from catp.decode import decode_bytes

ROOT = Path(__file__).resolve().parents[3]
ZH = (ROOT / "examples" / "contract_zh.txt").read_text(encoding="utf-8")[:3000]


def test_a_file_cut_mid_character_is_utf8_with_a_warning(tmp_path):
    data = ZH.encode("utf-8")[:-1]  # the last character loses its last byte
    path = tmp_path / "cut.txt"
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, "-m", "catp", "prune", str(path), "--ratio", "1/2", "--format", "json"],
                          capture_output=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"catp: warning: {path}: 1 invalid UTF-8 sequence replaced with U+FFFD" in proc.stderr.decode()
    result = json.loads(proc.stdout)
    assert result["stats"]["encoding"] == "utf-8" and result["stats"]["lang"] == "zh"
    text = ZH[:-1] + "\ufffd"
    assert all(text[k["start"]:k["end"]] in ZH + "\ufffd" for k in result["kept"])


def test_a_stray_byte_leaves_the_rest_of_the_text_exact():
    raw = ZH.encode("utf-8")
    cut = raw.index("第二条".encode())
    with pytest.warns(UserWarning, match="1 invalid UTF-8 sequence"):
        text, used = decode_bytes(raw[:cut] + b"\xff" + raw[cut:])
    assert used == "utf-8" and text == ZH.replace("第二条", "\ufffd第二条", 1)


@pytest.mark.parametrize("data", ["The café opens at nine. Naïve résumé. ".encode("cp1252") * 20,
                                  ZH.encode("gb18030")])
def test_legacy_encodings_are_still_detected(data):
    text, used = decode_bytes(data)
    assert "\ufffd" not in text and used != "utf-8"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_batch_puts_the_replacement_warning_in_each_row(jobs, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for n in range(3):
        (folder / f"cut{n}.txt").write_bytes(ZH.encode("utf-8")[:-1])  # cut mid-character
    proc = subprocess.run([sys.executable, "-m", "catp", "batch", str(folder), "--ratio", "1/2", "--jobs", jobs,
                           "--quiet"], capture_output=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert len(rows) == 3
    for row in rows:
        assert row["warnings"][0].endswith("1 invalid UTF-8 sequence replaced with U+FFFD"), row["warnings"]
    assert b"UserWarning" not in proc.stderr


def test_prune_bytes_reports_replaced_bytes_in_the_result(recwarn):
    from catp import Pruner

    result = Pruner().prune_bytes(ZH.encode("utf-8")[:-1], ratio="1/2")
    assert result.warnings[0] == "input: 1 invalid UTF-8 sequence replaced with U+FFFD"
    assert not [w for w in recwarn if "UTF-8" in str(w.message)]  # said once, in the result
