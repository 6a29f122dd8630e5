"""Document formats in the decode stage: PDF, DOCX and HTML are read as text (pypdf, python-docx,
inscriptis: the extras catp[pdf], catp[docx], catp[html]); other known binary formats get a one-line
message naming them.

The format is told by the file's first bytes, never by its name. The text extracted is what the
result's offsets refer to (`catp decode FILE` prints it): paragraphs and headings separated by blank
lines, a PDF's wrapped lines joined, a table's rows as lines of cells joined by " | "."""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter

from catp.errors import InputError

PDF, DOCX, HTML, TEXT = "pdf", "docx", "html", "text"
READS = "catp reads text, PDF, DOCX and HTML files"

# Magic bytes -> (what the file is, what to do). ZIP-based formats are told apart by their members.
_MAGIC = (
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Microsoft Office file (.doc/.xls/.ppt, OLE)",
     "save it as .docx or PDF first"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", "OCR it to text first"),
    (b"\xff\xd8\xff", "a JPEG image", "OCR it to text first"),
    (b"GIF87a", "a GIF image", "OCR it to text first"),
    (b"GIF89a", "a GIF image", "OCR it to text first"),
    (b"II*\x00", "a TIFF image", "OCR it to text first"),
    (b"MM\x00*", "a TIFF image", "OCR it to text first"),
    (b"\x1f\x8b", "a gzip archive", "decompress it first"),
    (b"\xfd7zXZ\x00", "an xz archive", "decompress it first"),
    (b"(\xb5/\xfd", "a zstd archive", "decompress it first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract it first"),
    (b"Rar!\x1a\x07", "a RAR archive", "extract it first"),
)
_ZIP_KINDS = (  # a member's name prefix -> (what, to do)
    ("xl/", "an Excel workbook (.xlsx)", "export its sheets as CSV or text first"),
    ("ppt/", "a PowerPoint presentation (.pptx)", "save it as PDF first"),
)
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
_UNTOKENIZABLE = re.compile("[\x00\ud800-\udfff]")
# pypdf's layout mode puts table cells (and text columns) this far apart; justified text and a bullet's or
# a section number's indent get gaps of 2-3 spaces (made one space)
_COLUMN_GAP = re.compile(r" {4,}")
_MARKER_GAP = re.compile(r"^([•◦▪▫■□●○·‣∙*–-]|(?:\d{1,3}\.)+\d{0,3}|\(?\d{1,3}\)|\(?[a-zA-Z]\)) {2,}")
_MARKER = re.compile(_MARKER_GAP.pattern.replace(" {2,}", " "))  # a list item's start, its gap made one space
_SPACES = re.compile(r" {2,}")
_BLANK_LINES = re.compile(r"\n{3,}")
_DIGITS = re.compile(r"\d+")
_HYPHEN_BREAK = re.compile(r"[^\W\d_]-$")  # a letter, then a hyphen ending the line
RUNNING_LINE_CHARS = 80  # a running header or footer is at most this long
_XML_DECLARATION = re.compile(r"^<\?xml [^>]+?\?>")


def sniff(data: bytes) -> tuple[str, str | None]:
    """(format, problem): "pdf" or "docx" to extract; "text" to decode, with `problem` the one-line
    reason when the bytes are another known binary format (image, archive, legacy Office...)."""
    head = data[:16]
    if data[:1024].lstrip().startswith(b"%PDF-"):
        return PDF, None
    if _is_html(data[:2048]):
        return HTML, None
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_kind(data)
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return TEXT, _binary("a WebP image", "OCR it to text first")
    if head.startswith(b"BZh") and data[4:10] == b"1AY&SY":
        return TEXT, _binary("a bzip2 archive", "decompress it first")
    for magic, what, todo in _MAGIC:
        if head.startswith(magic):
            return TEXT, _binary(what, todo)
    return TEXT, None


def _is_html(head: bytes) -> bool:
    """An HTML document: it opens with a doctype or an <html> tag (after a BOM, an XML declaration or
    comments), not a text that mentions a tag somewhere."""
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return True
    return head.startswith((b"<?xml", b"<!--")) and (b"<!doctype html" in head or b"<html" in head)


def _zip_kind(data: bytes) -> tuple[str, str | None]:
    try:
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    except Exception:  # BadZipFile, or NotImplementedError, ValueError, ... on a damaged directory
        return TEXT, _binary("a damaged or cut ZIP archive: a DOCX cut short?", "get the whole file")
    if "word/document.xml" in names:
        return DOCX, None
    for prefix, what, todo in _ZIP_KINDS:
        if any(n.startswith(prefix) for n in names):
            return TEXT, _binary(what, todo)
    if "mimetype" in names and any(n == "content.xml" for n in names):
        return TEXT, _binary("an OpenDocument file (.odt/.ods/.odp)", "save it as .docx or PDF first")
    return TEXT, _binary("a ZIP archive", "extract it first")


def _binary(what: str, todo: str) -> str:
    return f"binary, not text ({what}); {READS}: {todo}"


def extract(data: bytes, kind: str, source: str, max_bytes: int, notes: list[str]) -> str:
    """The text of a PDF or DOCX file; what the result should say goes in `notes`. Raises InputError
    (with what to do) when it cannot be had."""
    if kind == DOCX:  # a ZIP bomb is refused before it is unpacked (its XML is some times its text)
        unpacked = zipfile.ZipFile(io.BytesIO(data)).getinfo("word/document.xml").file_size
        if unpacked > 10 * max_bytes:
            raise InputError(f"{source}: its text part unpacks to {unpacked:,} bytes, over 10 times the size limit "
                             f"of {max_bytes:,} bytes (raise it with --max-bytes)")
    limit = TextLimit(source, max_bytes)
    return tokenizable(pdf_text(data, source, notes, limit) if kind == PDF else docx_text(data, source, limit))


class TextLimit:
    """The text extracted so far, in UTF-8 bytes: past `max_bytes` is an InputError at once, while extracting
    (a small file can hold far more text than its size: a DOCX's compressed XML, a vertically merged table cell
    repeated on every row)."""

    def __init__(self, source: str, max_bytes: int) -> None:
        self.source, self.max_bytes, self.total = source, max_bytes, 0

    def add(self, text: str | int) -> None:
        self.total += text if isinstance(text, int) else len(text.encode("utf-8", "surrogatepass"))
        if self.total > self.max_bytes:
            raise InputError(f"{self.source}: its text is over the size limit of {self.max_bytes:,} bytes "
                             "(raise it with --max-bytes)")


def html_text(html: str, source: str) -> str:
    """An HTML document's text as inscriptis lays it out (headings and paragraphs as blocks, list items as
    lines, scripts and styles left out), each table row a line of cells joined by " | " without the
    column padding, and blank lines between blocks (one, at most). NULs and lone surrogates become U+FFFD,
    those in `html` before parsing (an encoding given by the user, utf-7 say, can decode to them; lxml then
    dropped the rest of the document) and those it names (&#0;) after."""
    try:
        from inscriptis import Inscriptis
        from inscriptis.model.config import ParserConfig
    except ImportError:
        raise _missing(source, "an HTML file", "inscriptis", "html") from None
    html = tokenizable(html)
    html = _XML_DECLARATION.sub("", html.strip(), count=1)  # lxml refuses a str with an encoding declaration
    try:
        tree = _html_tree(html, source)
        for element in tree.iter():  # inscriptis unescapes text lxml has already unescaped: "&amp;lt;" would
            if element.text and "&" in element.text:  # read "<", not "&lt;"; escaped once more, it reads true
                element.text = element.text.replace("&", "&amp;")
            if element.tail and "&" in element.tail:
                element.tail = element.tail.replace("&", "&amp;")
        laid_out = Inscriptis(tree, ParserConfig(table_cell_separator=" | ")).get_text()
    except InputError:
        raise
    except Exception as exc:  # lxml raises several kinds on what it cannot parse
        raise InputError(f"{source}: cannot read this HTML file ({type(exc).__name__}: {exc})") from exc
    lines = [_SPACES.sub(" ", line).strip() for line in laid_out.splitlines()]
    text = _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
    if not text:
        raise InputError(f"{source}: an HTML file with no text")
    return tokenizable(text)


MAX_HTML_DEPTH = 200  # elements nested deeper are unwrapped (their text kept): inscriptis recurses per level
_INLINE_TAGS = re.compile(r"</?(?:font|b|i|u|s|em|strong|span|small|big|tt|strike|sup|sub|a|abbr|mark|code|q|"
                          r"cite|del|ins|kbd|samp|var|dfn|bdi|bdo|nobr|blink|center)(?:\s[^>]*)?/?>", re.IGNORECASE)


def _html_tree(html: str, source: str):
    """The parsed document, every element at most MAX_HTML_DEPTH deep. libxml2 stops reading past its depth limit
    (256; 2048 with huge_tree) and drops the rest (600 unclosed <font> tags of old HTML kept 254 lines): past it,
    inline tags, which hold no layout, are removed and the document is parsed again; still past it is an error."""
    from lxml.etree import ParserError
    from lxml.html import HTMLParser, document_fromstring

    for attempt in (html, _INLINE_TAGS.sub("", html)):
        parser = HTMLParser(huge_tree=True)
        try:
            tree = document_fromstring(attempt, parser=parser)
        except ParserError:  # no element at all
            tree = document_fromstring("<pre>" + attempt + "</pre>", parser=parser)
        if not any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
            break
    else:
        raise InputError(f"{source}: HTML nested too deeply to read whole (over 2,048 levels, inline tags aside)")
    _unwrap_deep(tree)
    return tree


def _unwrap_deep(tree) -> None:
    """Elements deeper than MAX_HTML_DEPTH give their text and children to their parent (deepest first)."""
    deep, depth = [], {tree: 0}
    for element in tree.iterdescendants():
        d = depth[element] = depth[element.getparent()] + 1
        if d > MAX_HTML_DEPTH:
            deep.append(element)
    for element in reversed(deep):
        if isinstance(element.tag, str):
            element.drop_tag()
        else:  # a comment or processing instruction: nothing to lay out
            element.drop_tree()


def tokenizable(text: str) -> str:
    """`text` with each NUL and lone surrogate made U+FFFD: tokenizers take neither. A PDF's odd font can map
    glyphs to them, and HTML can name them (&#0;, &#xD800;)."""
    return _UNTOKENIZABLE.sub("\ufffd", text)


def _missing(source: str, what: str, package: str, extra: str) -> InputError:
    return InputError(f"{source}: {what}; reading it needs the {package} package: pip install 'catp[{extra}]'")


# -- PDF ---------------------------------------------------------------------------------------------


def pdf_text(data: bytes, source: str, notes: list[str], limit: TextLimit) -> str:
    """A PDF's text, page by page (page_paragraphs), without running headers and footers. `extract` calls it."""
    try:
        import pypdf
    except ImportError:
        raise _missing(source, "a PDF file", "pypdf", "pdf") from None
    import logging

    log = logging.getLogger("pypdf")
    level = log.level
    log.setLevel(logging.CRITICAL)  # pypdf logs each oddity of a damaged file (some as errors): not one line
    try:
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):  # "" opens files with an owner password only
                raise InputError(f"{source}: an encrypted PDF (it needs a password); decrypt it first, e.g. "
                                 "qpdf --decrypt --password=PASSWORD in.pdf out.pdf")
            pages = []
            for page in reader.pages:
                pages.append(page_paragraphs(page))
                limit.add("\n\n".join(pages[-1]))
                limit.add(2)  # the page's separator
        except InputError:
            raise
        except pypdf.errors.DependencyError as exc:  # AES encryption without the cryptography package
            raise InputError(f"{source}: an encrypted PDF that pypdf cannot open here ({exc}); decrypt it "
                             "first, e.g. qpdf --decrypt in.pdf out.pdf") from exc
        except Exception as exc:  # pypdf raises many kinds on a damaged file
            raise InputError(f"{source}: cannot read this PDF ({type(exc).__name__}: {exc})") from exc
    finally:
        log.setLevel(level)
    empty = [n for n, p in enumerate(pages, 1) if not p]
    text = "\n\n".join("\n\n".join(p) for p in _without_running_lines(pages) if p)
    if not text.strip():
        what = f"{len(pages)} page{'s' if len(pages) != 1 else ''}" if pages else "no pages"
        raise InputError(f"{source}: a PDF with no text layer ({what}; scanned images?): OCR it first "
                         "(e.g. ocrmypdf --sidecar out.txt in.pdf out.pdf) and give catp the text")
    if empty:  # in the result's warnings
        listed = ", ".join(map(str, empty[:10])) + (", ..." if len(empty) > 10 else "")
        notes.append(f"{source}: {len(empty)} of {len(pages)} pages have no text (blank, or scanned: OCR them "
                     f"to prune their text too): page {listed}")
    return text


def _without_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """The pages without their running headers and footers: a short paragraph that opens (or ends) at least
    three pages and half of those with text, its numbers aside ("Page 3 of 40", "- 7 -", "ACME - Confidential"),
    is left out wherever it opens (ends) a page. Shorter documents keep them."""
    def shape(paragraph: str) -> str | None:
        return _DIGITS.sub("#", " ".join(paragraph.lower().split())) if len(paragraph) <= RUNNING_LINE_CHARS else None

    with_text = sum(1 for p in pages if p)
    need = max(3, (with_text + 1) // 2)
    for edge in (0, -1):  # headers, then footers
        counts = Counter(shape(p[edge]) for p in pages if p)
        running = {form for form, n in counts.items() if form is not None and n >= need}
        if running:
            pages = [_cut(p, edge) if p and shape(p[edge]) in running else p for p in pages]
    return pages


def _cut(paragraphs: list[str], edge: int) -> list[str]:
    return paragraphs[1:] if edge == 0 else paragraphs[:-1]


def page_paragraphs(page) -> list[str]:
    """A page as paragraphs. pypdf's layout mode keeps the vertical gaps (blank lines) that part
    paragraphs; within one, a line that ends well short of the longest ends a paragraph or is a
    heading, others are wrapped and joined. A line with wide gaps is a table row: cells joined by |.
    Two-column pages come out as such rows too (pypdf's layout mode sets the columns side by side)."""
    try:
        raw = page.extract_text(extraction_mode="layout", layout_mode_space_vertically=True)
    except Exception:  # layout mode needs font metrics some files lack: plain mode has no gaps
        raw = page.extract_text() or ""
    paragraphs: list[str] = []
    for block in re.split(r"\n\s*\n", raw):
        lines = [(len(line) - len(line.lstrip()), _MARKER_GAP.sub(r"\1 ", line.strip()))
                 for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        width = max(len(line) for _, line in lines)
        current, last, item = "", "", None  # last: the line `current` ends with; item: the indent of its list item
        for indent, line in lines:
            table_row = _COLUMN_GAP.search(line)
            starts_item = _MARKER.match(line)
            if current and (table_row or starts_item or (item is not None and indent <= item)):
                paragraphs.append(current)  # a table row, a list item or the text after one: a paragraph
                current, item = "", None
            if table_row:
                paragraphs.append(_COLUMN_GAP.sub(" | ", line))
                continue
            if starts_item:
                item = indent
            line = _SPACES.sub(" ", line)
            current = _join(current, last, line) if current else line
            last = line
            if len(line) < 0.7 * width:
                paragraphs.append(current)
                current, item = "", None
        if current:
            paragraphs.append(current)
    return _rows_together(paragraphs)


def _rows_together(paragraphs: list[str]) -> list[str]:
    """A table's rows on consecutive lines (one block), as in a DOCX."""
    out: list[str] = []
    for p in paragraphs:
        if out and " | " in p and " | " in out[-1].rsplit("\n", 1)[-1]:
            out[-1] += "\n" + p
        else:
            out.append(p)
    return out


def _join(paragraph: str, last: str, line: str) -> str:
    """A paragraph (ending with its wrapped line `last`) and the next line: no space next to a Chinese character,
    nor after a line of mostly Chinese text (Chinese is set to the full width, so a line can break inside a number:
    "¥50,0" / "00"). Only `last` counts, not the paragraph so far: English after Chinese lines keeps its spaces.
    A word broken with a hyphen at the line's end joins the next line's lower-case start, hyphen kept: the hyphen
    may be the word's own ("non-compete"), so "compen-sation" is as near as catp goes without a dictionary."""
    if _CJK.match(last[-1]) or _CJK.match(line[0]) or _mostly_cjk(last):
        return paragraph + line
    if _HYPHEN_BREAK.search(last) and line[0].islower():  # a word broken at the line's end: joined, hyphen kept
        return paragraph + line
    return f"{paragraph} {line}"


def _mostly_cjk(line: str) -> bool:
    letters = [c for c in line if not c.isspace()]
    return bool(letters) and 2 * sum(1 for c in letters if _CJK.match(c)) >= len(letters)


# -- DOCX --------------------------------------------------------------------------------------------


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DOCX_BREAKS = frozenset(_W + tag for tag in ("p", "br", "cr", "tab", "tc", "noBreakHyphen"))


def _docx_text_size(data: bytes, limit: TextLimit) -> None:
    """Counts the text of word/document.xml as it streams through the parser, before python-docx builds the
    whole tree: its w:t text, a byte for each paragraph, break or tab, three for each table cell's " | "."""
    from lxml import etree

    counter = TextLimit(limit.source, limit.max_bytes)
    with zipfile.ZipFile(io.BytesIO(data)).open("word/document.xml") as stream:
        for _, element in etree.iterparse(stream, events=("end",), huge_tree=True, resolve_entities=False,
                                          no_network=True, load_dtd=False):
            if element.tag == _W + "t":
                counter.add(element.text or "")
            elif element.tag in _DOCX_BREAKS:
                counter.add(3 if element.tag == _W + "tc" else 1)
            element.clear(keep_tail=True)
            parent = element.getparent()
            while parent is not None and element.getprevious() is not None:
                del parent[0]


def docx_text(data: bytes, source: str, limit: TextLimit) -> str:
    """A DOCX file's paragraphs and tables (rows of cells joined by |), in order. `extract` calls it."""
    try:
        import docx
        from docx.table import Table
    except ImportError:
        raise _missing(source, "a DOCX file", "python-docx", "docx") from None
    try:
        _docx_text_size(data, limit)
        document = docx.Document(io.BytesIO(data))
        blocks = []
        for block in document.iter_inner_content():  # paragraphs and tables, in document order
            if isinstance(block, Table):  # its rows counted as they come
                blocks.append("\n".join(_table_rows(block, limit)))
            else:
                blocks.append(block.text.strip())
                limit.add(blocks[-1])
            if blocks[-1].strip():
                limit.add(2)  # its separator
    except InputError:
        raise
    except Exception as exc:  # python-docx and lxml raise many kinds on a damaged file
        raise InputError(f"{source}: cannot read this DOCX file ({type(exc).__name__}: {exc})") from exc
    text = "\n\n".join(b for b in blocks if b.strip())
    if not text.strip():
        raise InputError(f"{source}: a DOCX file with no text")
    return text


def _table_rows(table, limit: TextLimit) -> list[str]:
    """Each row as its cells' text joined by " | "; a cell merged across columns counts once (one merged down
    rows is on each: `limit` counts the rows as they come)."""
    rows = []
    for row in table.rows:
        cells, previous = [], None
        for cell in row.cells:
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells))
            limit.add(rows[-1])
            limit.add(1)
    return rows
