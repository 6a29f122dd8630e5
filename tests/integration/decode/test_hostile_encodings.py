"""Issue 7, hostile documents: encodings (detected and reported as stats.encoding), --encoding,
newlines and long lines kept as they are, control characters, and what is refused (exit 2, one line)."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from pathlib import Path

import pytest

from catp.decode import decode_bytes
from catp.errors import InputError
from catp.pipeline import Pruner
from catp.segment.splitter import default_segmenter

from _samples import real_texts

ROOT = Path(__file__).resolve().parents[3]
# Traditional Chinese (Big5 cannot encode simplified characters), written for this test.
BIG5_TEXT = ("本契約自雙方簽署之日起生效，有效期間為三年。乙方應於每月五日前支付租金新臺幣參萬元整，"
             "逾期未付者，甲方得終止本契約並請求損害賠償。但經甲方書面同意者，不在此限。\n") * 3


@pytest.fixture(scope="module")
def pruner() -> Pruner:
    return Pruner()


@pytest.fixture(scope="module")
def zh() -> str:
    return real_texts("cail2019_cjrc", 1, 3000)[0]


def catp(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp", *args], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=120)


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("catp: error: "), err
    return lines[0]


def assert_offsets_into(result, text: str) -> None:
    assert result.text == result.gap_marker.join(text[s.start : s.end] for s in result.kept)


# ---------------------------------------------------------------- encodings

@pytest.mark.parametrize("encode, expected", [
    (lambda t: t.encode("utf-8"), "utf-8"),
    (lambda t: codecs.BOM_UTF8 + t.encode("utf-8"), "utf-8-sig"),
    (lambda t: t.encode("utf-16"), "utf-16"),  # with BOM, native order
    (lambda t: codecs.BOM_UTF16_LE + t.encode("utf-16-le"), "utf-16"),
    (lambda t: codecs.BOM_UTF16_BE + t.encode("utf-16-be"), "utf-16"),
    (lambda t: t.encode("utf-32"), "utf-32"),
    (lambda t: t.encode("gb18030"), "gb18030"),
    (lambda t: t.encode("gbk"), "gb18030"),  # GB18030 is a superset of GBK: reported as such
], ids=["utf8", "utf8-bom", "utf16", "utf16le-bom", "utf16be-bom", "utf32", "gb18030", "gbk"])
def test_encodings_are_detected_and_reported(pruner, zh, encode, expected):
    result = pruner.prune_bytes(encode(zh), budget=200)
    assert result.stats.encoding == expected
    assert_offsets_into(result, zh)  # offsets refer to the decoded text (no BOM)


def test_big5_is_detected(pruner):
    result = pruner.prune_bytes(BIG5_TEXT.encode("big5"), budget=40)
    assert result.stats.encoding == "big5"
    assert_offsets_into(result, BIG5_TEXT)


def test_short_gbk_snippets_decode(zh):
    for n in (20, 60, 200):
        assert decode_bytes(zh[:n].encode("gbk")) == (zh[:n], "gb18030")


def test_cli_reports_the_detected_encoding(tmp_path):
    path = tmp_path / "big5.txt"
    path.write_bytes(BIG5_TEXT.encode("big5"))
    proc = catp("prune", str(path), "--budget", "40", "--format", "json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["stats"]["encoding"] == "big5"
    assert data["text"] == data["gap_marker"].join(BIG5_TEXT[k["start"] : k["end"]] for k in data["kept"])


def test_cli_encoding_override(tmp_path, zh):
    path = tmp_path / "gb.txt"
    path.write_bytes(zh.encode("gb18030"))
    proc = catp("prune", str(path), "--budget", "10000", "--encoding", "gb18030", "--format", "json", "--quiet")
    data = json.loads(proc.stdout)
    assert data["stats"]["encoding"] == "gb18030" and data["text"] == zh
    # an override that cannot decode the bytes is a one-line error, not a guess
    assert "cannot decode as utf-8" in one_line_error(catp("prune", str(path), "--budget", "50",
                                                             "--encoding", "utf-8"))


def test_utf16_without_bom_needs_the_override(tmp_path, zh):
    path = tmp_path / "u16.txt"
    path.write_bytes(zh.encode("utf-16-le"))
    assert "--encoding" in one_line_error(catp("prune", str(path), "--budget", "50"))
    proc = catp("prune", str(path), "--budget", "10000", "--encoding", "utf-16-le", "--quiet")
    assert proc.returncode == 0 and proc.stdout.decode("utf-8") == zh + "\n"


def test_bom_with_invalid_bytes_is_refused():
    with pytest.raises(InputError, match="byte-order mark but does not decode"):
        decode_bytes(codecs.BOM_UTF8 + "正文".encode() + b"\xff\xfe\xfd")


# ---------------------------------------------------------------- text kept as it is

def test_mixed_newlines_are_kept_verbatim(pruner):
    text = "第一条 总则\r\n甲方应支付货款三百万元。\r乙方不得转让本合同。\nThe fee is $5,000.\r\n\r\nLate fees apply.\n"
    assert pruner.prune(text, budget=10_000).text == text
    result = pruner.prune_bytes(text.encode("utf-8"), budget=15)
    assert_offsets_into(result, text)
    assert result.stats.output_tokens <= 15


def test_cli_keeps_crlf_bytes(tmp_path):
    text = "Line one is here.\r\nLine two is here.\rLine three.\n"
    path = tmp_path / "crlf.txt"
    path.write_bytes(text.encode("utf-8"))
    out = tmp_path / "out.txt"
    assert catp("prune", str(path), "--budget", "1000", "-o", str(out), "--quiet").returncode == 0
    assert out.read_bytes() == text.encode("utf-8") + b"\n"


def test_very_long_line_is_pruned_within_budget(pruner):
    line = " ".join(f"item{i} costs ${i}.00 and ships in {i % 30} days" for i in range(6000))  # ~250k chars
    assert "\n" not in line and len(line) > 200_000
    result = pruner.prune(line, budget=400)
    assert result.stats.output_tokens <= 400 and result.kept
    assert_offsets_into(result, line)
    limit = default_segmenter().config.max_unit_chars
    assert result.stats.units_total >= len(line) // limit


def test_single_giant_token_run(pruner):
    text = "a" * 300_000
    result = pruner.prune(text, budget=50)
    assert result.stats.output_tokens <= 50
    assert_offsets_into(result, text)


@pytest.mark.parametrize("weird", ["\x01\x02\x03", "\x1b[31m", "\x7f", "\x0b\x0c", "\x85", "\u2028\u2029",
                                   "\u200b\u200d\ufeff", "\u202e\u2066", "\ufffd", "\U0001f600\U0001f1e8\U0001f1f3"])
def test_control_and_odd_characters(pruner, weird):
    text = f"The fee is $5,000.{weird} 甲方应支付三百万元。{weird}\nDue on March 5, 2024.{weird} Nothing else here."
    for budget in (5, 12, 1000):
        result = pruner.prune(text, budget=budget)
        assert result.stats.output_tokens <= budget
        assert_offsets_into(result, text)
    assert pruner.prune(text, budget=1000).text == text


def test_a_few_nuls_in_text_are_kept_but_nul_riddled_bytes_are_refused(pruner):
    text = ("The fee is $5,000 payable within 30 days. " * 5) + "\x00" + " Late fees apply."
    result = pruner.prune_bytes(text.encode("utf-8"), budget=1000)
    assert result.text == text
    with pytest.raises(InputError, match="binary"):
        decode_bytes(b"\x00\x01\x02\x03abc" * 50)


def test_lone_surrogates_are_refused(pruner):
    with pytest.raises(InputError, match="surrogate"):
        pruner.prune("The fee is \ud800 five dollars.", budget=5)


# ---------------------------------------------------------------- refused: exit 2, one line

def test_binary_file_is_refused(tmp_path):
    path = tmp_path / "a.out"
    path.write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + bytes(range(256)) * 16)
    assert "binary" in one_line_error(catp("prune", str(path), "--budget", "10"))


def test_gzip_file_is_refused(tmp_path):
    import gzip

    path = tmp_path / "doc.txt.gz"
    path.write_bytes(gzip.compress(("The fee is $5,000. " * 200).encode(), mtime=0))
    assert "binary" in one_line_error(catp("prune", str(path), "--budget", "10"))


@pytest.mark.parametrize("data", [b"", b"\n\n  \t", codecs.BOM_UTF8, codecs.BOM_UTF16_LE + " \n".encode("utf-16-le")])
def test_empty_files_are_refused(tmp_path, data):
    path = tmp_path / "empty.txt"
    path.write_bytes(data)
    assert "empty" in one_line_error(catp("prune", str(path), "--budget", "10"))


def test_over_max_bytes_is_refused(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"The fee is $5,000. " * 100)
    line = one_line_error(catp("prune", str(path), "--budget", "10", "--max-bytes", "1000"))
    assert "1,900 bytes is over the size limit of 1,000 bytes" in line and "--max-bytes" in line
    line = one_line_error(catp("prune", "-", "--budget", "10", "--max-bytes", "1000",
                               stdin=b"The fee is $5,000. " * 100))
    assert "<stdin>" in line and "--max-bytes" in line


def test_real_chinese_documents_in_gb18030_decode_exactly():
    """Court judgments with ×××× redactions once defeated detection (refused, or read as Japanese)."""
    texts = real_texts("cail2019_cjrc", 27, 30_000) + real_texts("ccks2017_cner", 13, 30_000)
    wrong = []
    for i, text in enumerate(texts):
        for n in (2_000, 30_000):
            got = decode_bytes(text[:n].encode("gb18030"))
            if got != (text[:n], "gb18030"):
                wrong.append((i, n, got[1]))
    assert not wrong


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
@pytest.mark.parametrize("extra", [["--max-bytes", "4096"], []])
def test_endless_device_is_cut_at_the_limit(extra):
    """/dev/zero reports size 0 and never ends: catp reads at most --max-bytes + 1 bytes (it once read
    until MemoryError)."""
    line = one_line_error(catp("prune", "/dev/zero", "--budget", "10", *extra))
    assert "/dev/zero" in line and "over the size limit" in line


def test_huge_max_bytes_is_not_allocated(tmp_path):
    path = tmp_path / "small.txt"
    path.write_text("The fee is $5,000, due on March 5, 2024.", encoding="utf-8")
    proc = catp("prune", str(path), "--budget", "100", "--max-bytes", str(10**20), "--quiet")
    assert proc.returncode == 0 and b"$5,000" in proc.stdout


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc here")
def test_unreadable_special_file():
    """/proc/self/mem opens but read() fails with EIO: one line, not a traceback."""
    assert "cannot read" in one_line_error(catp("prune", "/proc/self/mem", "--budget", "10"))
