"""bytes -> text: PDF, DOCX and HTML extracted (catp/formats.py), else detect the encoding; reject what is not
text, enforce size limits. What the result should say (bad UTF-8 replaced, pages without text) comes
back in `Decoded.warnings`, not as Python warnings: those are process-wide, and threads would mix them."""

from __future__ import annotations

import codecs
import os
import re
import warnings
from typing import NamedTuple

from catp.arguments import check_encoding, check_max_bytes
from catp.config import DEFAULTS
from catp.errors import InputError
from catp.formats import HTML, READS, TEXT, extract, html_text, sniff
from catp.surrogates import LONE_SURROGATE, has_lone_surrogates  # noqa: F401 (has_lone_surrogates: re-exported)

DEFAULT_MAX_BYTES = DEFAULTS.max_bytes
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
# Chinese legacy encodings: GB18030 is a superset of GBK and GB2312.
_ALIASES = {"gb2312": "gb18030", "gbk": "gb18030", "cp936": "gb18030", "ascii": "utf-8"}


class Decoded(NamedTuple):
    text: str  # what the result's offsets refer to
    encoding: str | None  # None for a PDF or DOCX (HTML is decoded as text first)
    format: str  # "text", "pdf", "docx" or "html"
    warnings: tuple[str, ...] = ()  # for the result's warnings: bad UTF-8 replaced, pages without text


def decode_bytes(data: bytes, *, encoding: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 source: str = "input") -> tuple[str, str | None]:
    """Return (text, encoding): `decode_input` without the format; its warnings are Python warnings."""
    decoded = decode_input(data, encoding=encoding, max_bytes=max_bytes, source=source)
    _warn(decoded.warnings)
    return decoded.text, decoded.encoding


def _warn(notes) -> None:
    for note in notes:
        warnings.warn(note, stacklevel=3)


def decode_input(data: bytes, *, encoding: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 source: str = "input") -> Decoded:
    """PDF, DOCX and HTML (told by their first bytes) give their extracted text; other bytes are decoded
    (BOM, UTF-8, else detected; `encoding` overrides, for text and HTML). Raises InputError for empty,
    binary, oversized or undecodable input, and for a PDF, DOCX or HTML file that cannot be read."""
    check_max_bytes(max_bytes)
    check_encoding(encoding)
    if len(data) > max_bytes:
        raise InputError(f"{source}: {len(data):,} bytes is over the size limit of {max_bytes:,} bytes (raise it with --max-bytes)")
    if not data.strip():
        raise InputError(f"{source}: the input is empty")
    kind, problem = sniff(data)
    notes: list[str] = []
    if kind not in (TEXT, HTML):
        text = extract(data, kind, source, max_bytes, notes)
        return Decoded(text, None, kind, tuple(notes))
    if encoding:
        try:  # the user says it is text: NUL characters are kept, not taken for binary
            text, used = _clean(data.decode(encoding), source, nul_check=False), encoding
        except (LookupError, UnicodeDecodeError) as exc:
            raise InputError(f"{source}: cannot decode as {encoding}: {exc}") from exc
        text, lone = LONE_SURROGATE.subn("\ufffd", text)  # utf-7 or unicode_escape can name them; no tokenizer takes them
        if lone:
            notes.append(f"{source}: decoding as {encoding} gave {lone} lone surrogate{'s' if lone != 1 else ''} "
                         "(not valid Unicode), each made U+FFFD")
    elif problem:
        raise InputError(f"{source}: {problem}")
    else:
        text, used = _decode_text(data, source, notes)
    if kind == HTML:  # decoded as text first (its encoding as any text's), then its text extracted
        text = html_text(text, source)
    return Decoded(text, used, kind, tuple(notes))


def _decode_text(data: bytes, source: str, notes: list[str]) -> tuple[str, str]:
    for bom, name in _BOMS:
        if data.startswith(bom):
            try:
                return _clean(data.decode(name), source), name
            except UnicodeDecodeError as exc:
                raise InputError(f"{source}: has a {name} byte-order mark but does not decode: {exc}") from exc
    try:
        return _clean(data.decode("utf-8"), source), "utf-8"
    except UnicodeDecodeError:
        pass
    if b"\x00" in data:
        raise InputError(f"{source}: looks binary (NUL bytes, not UTF-16/32 with a BOM); {READS}; "
                         "give --encoding (e.g. utf-8) if it is text")
    mostly = _mostly_utf8(data, source, notes)
    if mostly is not None:
        return _clean(mostly, source), "utf-8"
    best = _detect(data)
    if best is None:
        raise InputError(f"{source}: looks binary or uses an unknown encoding; give --encoding")
    best = _prefer_western(data, best, source, notes)
    name = _ALIASES.get(best.encoding.lower().replace("-", ""), best.encoding)
    try:
        return _clean(data.decode(name), source), name
    except (LookupError, UnicodeDecodeError):
        return _clean(str(best), source), best.encoding


def _mostly_utf8(data: bytes, source: str, notes: list[str]) -> str | None:
    """UTF-8 with a few bad bytes (a file cut mid-character by `head -c`, a stray byte) is UTF-8: its
    many valid multi-byte characters say so. Detection used to refuse such Chinese text as binary, or
    read the whole file in a wrong code page. The bad bytes become U+FFFD, with a warning."""
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    wide = sum(1 for ch in text if ch > "\x7f") - bad
    if bad == 0 or wide < 10 * bad:  # a legacy encoding's text has few or no valid UTF-8 sequences
        return None
    notes.append(f"{source}: {bad} invalid UTF-8 sequence{'s' if bad > 1 else ''} replaced with U+FFFD")
    return text


def _detect(data: bytes):
    """charset-normalizer's best guess. Chinese legal and medical text full of symbols (×××× redactions,
    ｜, full-width forms) can look chaotic to it: it then gives up on GB18030 or picks a Japanese code
    page with no coherent language. Then a GB18030/Big5 reading that is coherent Chinese wins."""
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None or not best.coherence:
        zh = from_bytes(data, cp_isolation=["gb18030", "big5"], threshold=1.0).best()
        if zh is not None and zh.coherence > (best.coherence if best is not None else 0.0):
            best = zh
    return best


# Preferred over another single-byte code page that reads the bytes as cleanly (no more chaos) and no more
# coherently: French or German Latin-1 text was read as cp775 or cp1257 ("licenciķ", "garēon").
# cp1252 reads every Latin-1 text without C1 controls the same way.
_WESTERN = "cp1252"
_WESTERN_CHAOS_SLACK = 0.02


def _prefer_western(data: bytes, best, source: str, notes: list[str]):
    """cp1252 rather than charset-normalizer's guess of another single-byte code page, when the bytes decode
    in cp1252 with at most a little more chaos and at least the same coherence (a language it recognises);
    says so in the notes. Text that cp1252 garbles (Cyrillic, Greek, Polish) keeps the guess."""
    guess = best.encoding.lower()
    if guess == _WESTERN or guess in ("latin_1", "iso8859_1") or not _single_byte(guess):
        return best
    try:
        data.decode(_WESTERN)
    except UnicodeDecodeError:
        return best
    from charset_normalizer import from_bytes

    western = from_bytes(data, cp_isolation=[_WESTERN], threshold=1.0).best()
    if (western is None or western.chaos > best.chaos + _WESTERN_CHAOS_SLACK
            or western.coherence < best.coherence):
        return best
    notes.append(f"{source}: read as {_WESTERN} (Western European, Latin-1); detection also fitted {best.encoding}; "
                 "give --encoding if that is wrong")
    return western


def _single_byte(encoding: str) -> bool:
    """One byte per character (cp775, cp1257, mac_roman ...), not a multi-byte encoding."""
    try:
        return len(codecs.encode("\u00e9", encoding, "replace")) == 1 and not codecs.lookup(encoding).name.startswith(
            ("utf", "gb", "big5", "shift", "euc", "cp9", "iso2022", "hz", "johab"))
    except LookupError:
        return False


def _clean(text: str, source: str, nul_check: bool = True) -> str:
    """Text stays exactly as decoded (offsets refer to it), but NUL-riddled text is refused unless
    its encoding was given."""
    if not text.strip():
        raise InputError(f"{source}: the input is empty")
    nul = text.count("\x00")
    if nul_check and nul and nul > len(text) // 100:
        raise InputError(f"{source}: looks binary ({nul} NUL characters); give --encoding if it is text "
                         "(utf-8 keeps the NULs; utf-16-le/be or utf-32 for such text without a BOM)")
    return text


def read_text(path: str, *, encoding: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, str | None]:
    """Read a file (or '-' for stdin) and decode it: (text, encoding); its warnings are Python warnings."""
    decoded = read_input(path, encoding=encoding, max_bytes=max_bytes)
    _warn(decoded.warnings)
    return decoded.text, decoded.encoding


def read_input(path: str, *, encoding: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Decoded:
    """Read a file (or '-' for stdin) and decode it (`decode_input`): text, encoding and format."""
    check_max_bytes(max_bytes)
    check_encoding(encoding)
    import sys

    if path == "-":
        data = _read_limited(sys.stdin.buffer, max_bytes)
        return decode_input(data, encoding=encoding, max_bytes=max_bytes, source="<stdin>")
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise InputError(f"{path}: {size:,} bytes is over the size limit of {max_bytes:,} bytes (raise it with --max-bytes)")
        with open(path, "rb") as fh:
            data = _read_limited(fh, max_bytes)
    except IsADirectoryError as exc:
        raise InputError(f"{path}: is a directory") from exc
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except PermissionError as exc:
        raise InputError(f"{path}: permission denied") from exc
    except OSError as exc:  # e.g. EIO from /proc/self/mem
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    return decode_input(data, encoding=encoding, max_bytes=max_bytes, source=path)


def _read_limited(fh, max_bytes: int) -> bytes:
    """At most max_bytes + 1 bytes, read in chunks: a device or FIFO reports size 0 and may never
    end (/dev/zero), and read(n) would allocate n bytes up front."""
    chunks, total = [], 0
    while total <= max_bytes:
        chunk = fh.read(min(1 << 20, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
