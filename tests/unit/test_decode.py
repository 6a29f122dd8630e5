"""decode.py: bytes -> (text, encoding); empty, binary, oversized and undecodable input is refused."""

from __future__ import annotations

import io
import sys

import pytest

from catp.decode import decode_bytes, read_text
from catp.errors import InputError

EN = "The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.\n"
ZH = "甲方应于2024年3月5日前向乙方支付违约金三百万元。但是，如果乙方未按期交付，甲方有权解除本合同。\n"


def test_utf8_is_returned_unchanged():
    text, used = decode_bytes((EN + ZH).encode("utf-8"))
    assert (text, used) == (EN + ZH, "utf-8")


def test_ascii_is_reported_as_utf8():
    assert decode_bytes(EN.encode("ascii")) == (EN, "utf-8")


@pytest.mark.parametrize("data", [b"", b"   ", b"\n\r\n\t  \n"])
def test_empty_or_blank_is_refused(data):
    with pytest.raises(InputError, match="empty"):
        decode_bytes(data)


def test_blank_after_decoding_is_refused():
    # a BOM followed by whitespace is not empty as bytes, but is as text
    with pytest.raises(InputError, match="empty"):
        decode_bytes(b"\xef\xbb\xbf  \n")


def test_nul_bytes_are_refused_as_binary():
    with pytest.raises(InputError, match="binary"):
        decode_bytes(b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)) * 4)


def test_size_limit_names_the_option():
    with pytest.raises(InputError, match="--max-bytes"):
        decode_bytes(EN.encode() * 10, max_bytes=len(EN))
    # exactly at the limit is fine
    assert decode_bytes(EN.encode(), max_bytes=len(EN.encode()))[0] == EN


def test_source_name_is_in_the_message():
    with pytest.raises(InputError, match=r"^contract\.txt: "):
        decode_bytes(b"", source="contract.txt")


def test_encoding_override_wins():
    data = ZH.encode("gb18030")
    assert decode_bytes(data, encoding="gb18030") == (ZH, "gb18030")
    # latin-1 decodes any bytes: the override is obeyed even when detection would differ
    text, used = decode_bytes(data, encoding="latin-1")
    assert used == "latin-1" and text == data.decode("latin-1")


@pytest.mark.parametrize("encoding, match", [("no-such-codec", "unknown encoding"), ("utf-8", "cannot decode")])
def test_bad_override_is_an_input_error(encoding, match):
    with pytest.raises(InputError, match=match):
        decode_bytes(ZH.encode("gb18030"), encoding=encoding)


def test_read_text_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_text(str(tmp_path / "nope.txt"))


def test_read_text_directory(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        read_text(str(tmp_path))


def test_read_text_checks_the_size_before_reading(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 100)
    with pytest.raises(InputError, match="100 bytes is over the size limit of 99 bytes"):
        read_text(str(path), max_bytes=99)


def test_read_text_file_roundtrip(tmp_path):
    path = tmp_path / "doc.txt"
    path.write_bytes(ZH.encode("utf-8"))
    assert read_text(str(path)) == (ZH, "utf-8")


def test_read_text_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(EN.encode("utf-16"))))
    assert read_text("-") == (EN, "utf-16")


def test_read_text_stdin_over_the_limit(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"y" * 50)))
    with pytest.raises(InputError, match=r"<stdin>: .*over the size limit"):
        read_text("-", max_bytes=10)


@pytest.mark.parametrize("encoding, data", [("utf-7", b"Fee +2AA- due on 5 March 2024."),
                                            ("unicode_escape", b"Fee \\ud800 due on 5 March 2024.")])
def test_a_given_encoding_that_yields_lone_surrogates_gives_replacement_characters_and_a_warning(encoding, data):
    """Plain text decoded with an encoding that can name lone surrogates: each becomes U+FFFD (one character
    for one, so offsets hold), with a warning; before, prune_bytes refused it with advice to use prune_bytes."""
    from catp import Pruner
    from catp.decode import decode_input

    decoded = decode_input(data, encoding=encoding)
    assert decoded.text == "Fee \ufffd due on 5 March 2024."
    assert len(decoded.warnings) == 1 and "1 lone surrogate " in decoded.warnings[0] and encoding in decoded.warnings[0]
    result = Pruner().prune_bytes(data, encoding=encoding, ratio=1)
    assert result.text == decoded.text and result.warnings[0] == decoded.warnings[0]
