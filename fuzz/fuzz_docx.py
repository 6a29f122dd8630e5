"""Coverage-guided fuzzing of DOCX input (atheris / libFuzzer).

Each input becomes a DOCX: the least DOCX python-docx opens (content types, package relations, word/document.xml), its document, either by
raw fuzzed bytes or by a body built from fuzzed choices (paragraphs, runs, text with fuzzed characters, tabs
and breaks, tables with cells merged across and down, nesting, entities), read by `decode_input` with a
fuzzed --max-bytes. A `CatpError` is an expected outcome; any other exception, or a failed check, is a crash.
Checks: the text has no NUL or lone surrogate and is within max_bytes (bounded while extracting), and for
built documents read whole, every marker word is in the text.

    PYTHONPATH=. python fuzz/fuzz_docx.py -atheris_runs=100000 -max_len=1024 -artifact_prefix=/tmp/fz/ /tmp/fz/docx
"""

from __future__ import annotations

import io
import sys
import zipfile
from xml.sax.saxutils import escape

import atheris

with atheris.instrument_imports(include=["catp"]):
    from catp.decode import decode_input, has_lone_surrogates
    from catp.errors import CatpError

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


CONTENT_TYPES = (b'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
                 b'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
                 b'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override '
                 b'PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                 b'wordprocessingml.document.main+xml"/></Types>')
RELS = (b'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
        b'relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        b'relationships/officeDocument" Target="word/document.xml"/></Relationships>')
TEMPLATE = {"[Content_Types].xml": CONTENT_TYPES, "_rels/.rels": RELS, "word/document.xml": b""}  # the least a DOCX is


def pack(document_xml: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in TEMPLATE.items():
            z.writestr(name, document_xml if name == "word/document.xml" else data)
    return out.getvalue()


def paragraph(fdp, words: list[str], n: int) -> str:
    runs = []
    for k in range(fdp.ConsumeIntInRange(1, 4)):
        op = fdp.ConsumeIntInRange(0, 5)
        if op == 0:
            runs.append("<w:r><w:tab/></w:r>")
        elif op == 1:
            runs.append("<w:r><w:br/></w:r>")
        else:
            word = f"qz{n}y{k}x"
            words.append(word)
            text = escape(fdp.ConsumeUnicodeNoSurrogates(8).replace("\x00", "")) * fdp.ConsumeIntInRange(1, 50)
            runs.append(f'<w:r><w:t xml:space="preserve">{word} {text}</w:t></w:r>')
    return "<w:p>" + "".join(runs) + "</w:p>"


def table(fdp, words: list[str], n: int) -> str:
    rows, cols = fdp.ConsumeIntInRange(1, 12), fdp.ConsumeIntInRange(1, 4)
    merge_down = fdp.ConsumeBool()
    out = ["<w:tbl><w:tblGrid>" + "<w:gridCol/>" * cols + "</w:tblGrid>"]
    for r in range(rows):
        cells = []
        for c in range(cols):
            props = ""
            if merge_down and c == 0:
                props = '<w:tcPr><w:vMerge w:val="restart"/></w:tcPr>' if r == 0 else "<w:tcPr><w:vMerge/></w:tcPr>"
            body = paragraph(fdp, words, n * 1000 + r * 10 + c) if (r == 0 or c or not merge_down) else "<w:p/>"
            cells.append(f"<w:tc>{props}{body}</w:tc>")
        out.append("<w:tr>" + "".join(cells) + "</w:tr>")
    return "".join(out) + "</w:tbl>"


def built(fdp) -> tuple[bytes, list[str]]:
    words: list[str] = []
    blocks = []
    for n in range(fdp.ConsumeIntInRange(0, 12)):
        blocks.append(table(fdp, words, n) if fdp.ConsumeIntInRange(0, 3) == 0 else paragraph(fdp, words, n))
    xml = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {W}><w:body>' + "".join(blocks) \
        + "</w:body></w:document>"
    return xml.encode("utf-8"), words


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    max_bytes = fdp.ConsumeIntInRange(1, 200_000)
    if fdp.ConsumeIntInRange(0, 3) == 0:
        xml, words = fdp.ConsumeBytes(fdp.remaining_bytes()), []
    else:
        xml, words = built(fdp)
    raw = pack(xml)
    max_bytes = max(max_bytes, len(raw))
    try:
        decoded = decode_input(raw, max_bytes=max_bytes, source="fuzz.docx")
    except CatpError:
        return
    text = decoded.text
    assert decoded.format == "docx"
    assert "\x00" not in text and not has_lone_surrogates(text), "untokenizable text"
    assert len(text.encode("utf-8")) <= max_bytes, "over max_bytes"
    missing = [w for w in words if w not in text]
    assert not missing, f"text lost silently: {missing[:5]}"


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
