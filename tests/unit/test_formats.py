"""PDF, DOCX and HTML input (catp/formats.py, in the decode stage) and the one-line word for other binary files.

The PDFs are written by fpdf2 and the DOCX files by python-docx here, then read back by pypdf and
python-docx through catp: the API (`prune_bytes`, `prune_file`), `catp prune`, `catp decode`, `catp batch`
and a folder. The offsets of every result must index the extracted text that `catp decode` prints."""

from __future__ import annotations

import gzip
import html
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from catp.decode import decode_input, read_input
from catp.errors import InputError
from catp.pipeline import Pruner

ROOT = Path(__file__).resolve().parents[2]
READS = "catp reads text, PDF, DOCX and HTML"

EN_HEADING = "Article 4. Payment and Delivery"
EN_PARAGRAPHS = [
    "The Buyer shall pay the Supplier USD 12,500 within thirty (30) days of the invoice date. Late payments "
    "bear interest at 1.5% per month until paid in full, and the Supplier may suspend deliveries while any "
    "amount is overdue.",
    "The Supplier shall deliver the goods to the Buyer's warehouse in Newark, New Jersey no later than "
    "March 15, 2025. Risk of loss passes to the Buyer on delivery; title passes on payment of the price.",
    "Either party may terminate this Agreement on ninety (90) days' written notice to the other party. "
    "Neither party shall be liable for indirect or consequential damages arising out of this Agreement.",
    "This Agreement is governed by the laws of the State of New York, without regard to its conflict of "
    "laws rules, and the parties submit to the courts of New York County.",
]
EN_TABLE = [("Item", "Quantity", "Unit price"), ("Widget", "1,000", "$10.00"), ("Gadget", "250", "$42.50")]
ZH_HEADING = "第三条 付款方式"
ZH_PARAGRAPHS = [
    "甲方应于2024年3月1日前向乙方支付合同价款人民币伍万元整（¥50,000），逾期付款的，每日按未付金额的万分之五支付违约金。",
    "乙方应在收到全部价款后十个工作日内交付货物，并提供合格证明及发票。货物交付前的毁损、灭失风险由乙方承担。",
    "本合同未尽事宜，双方可另行签订补充协议；补充协议与本合同具有同等法律效力。因本合同引起的争议，提交上海仲裁委员会仲裁。",
]
ZH_TABLE = [("项目", "数量", "金额"), ("服务器", "2台", "¥30,000"), ("维护费", "1年", "¥20,000")]


def catp(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp", *args], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=300)


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.startswith("catp: error: ") and err.count("\n") == 1, err
    return err


def rows_of(table) -> list[str]:
    return [" | ".join(row) for row in table]


def check_extract(result, text: str) -> None:
    """An ordered extract of `text` (the decoded input), within the budget."""
    spans = result.kept
    assert spans and all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    assert result.text == result.gap_marker.join(text[s.start:s.end] for s in spans)
    assert result.stats.output_tokens <= result.stats.budget


# -- fixtures: real files ------------------------------------------------------------------------------------


def make_docx(heading: str, paragraphs: list[str], table) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    document.add_paragraph(paragraphs[0])
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    for r, row in enumerate(table):
        for c, value in enumerate(row):
            grid.cell(r, c).text = value
    for paragraph in paragraphs[1:]:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_html(heading: str, paragraphs: list[str], table, charset: str = "utf-8") -> str:
    """A page as a browser gets it: head, style and script (no text of the document's), entities, inline
    markup, the table after the first paragraph, a list."""
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table)
    body = [f"<h1>{html.escape(heading)}</h1>", f"<p>{html.escape(paragraphs[0])}</p>", f"<table>{cells}</table>",
            *[f"<p>\n  {html.escape(p)}\n</p>" for p in paragraphs[1:]],
            "<ul><li>First item</li><li>Second item</li></ul>"]
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"{charset}\"><title>Not in the text</title>"
            "<style>p { color: #333 }</style><script>var hidden = 1;</script></head>\n<body>"
            + "\n".join(body) + "</body></html>\n")


def make_pdf(heading: str, paragraphs: list[str], table, font: str | None = None) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    if font:
        pdf.add_font("cjk", "", font)
    face = "cjk" if font else "Helvetica"
    pdf.set_font(face, "" if font else "B", 16)
    pdf.cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font(face, size=11)
    for paragraph in paragraphs:
        pdf.multi_cell(0, 6, paragraph)  # wrapped over several lines
        pdf.ln(5)
    with pdf.table() as grid:
        for row in table:
            cells = grid.row()
            for value in row:
                cells.cell(value)
    return bytes(pdf.output())


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("formats")
    paths = {"en.pdf": make_pdf(EN_HEADING, EN_PARAGRAPHS, EN_TABLE),
             "en.docx": make_docx(EN_HEADING, EN_PARAGRAPHS, EN_TABLE),
             "zh.docx": make_docx(ZH_HEADING, ZH_PARAGRAPHS, ZH_TABLE),
             "en.html": make_html(EN_HEADING, EN_PARAGRAPHS, EN_TABLE).encode("utf-8")}
    for name, data in paths.items():
        (folder / name).write_bytes(data)
    return {name: folder / name for name in paths}


@pytest.fixture(scope="module")
def pruner() -> Pruner:
    return Pruner()


# -- extraction ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, heading, paragraphs, table", [
    ("en.docx", EN_HEADING, EN_PARAGRAPHS, EN_TABLE), ("zh.docx", ZH_HEADING, ZH_PARAGRAPHS, ZH_TABLE)])
def test_docx_keeps_heading_paragraphs_and_table_rows_in_order(files, name, heading, paragraphs, table):
    text, encoding, fmt, _ = read_input(str(files[name]))
    assert (encoding, fmt) == (None, "docx")
    blocks = [heading, paragraphs[0], "\n".join(rows_of(table)), *paragraphs[1:]]
    assert text == "\n\n".join(blocks)


def test_pdf_joins_wrapped_lines_and_keeps_paragraphs_heading_and_table(files):
    text, encoding, fmt, _ = read_input(str(files["en.pdf"]))
    assert (encoding, fmt) == (None, "pdf")
    blocks = text.split("\n\n")
    assert blocks[0] == EN_HEADING
    assert blocks[1:1 + len(EN_PARAGRAPHS)] == EN_PARAGRAPHS  # each paragraph one line, wrapped lines joined
    assert blocks[-1].split("\n") == rows_of(EN_TABLE)


def make_zh_pdf() -> bytes:
    """A Chinese PDF by reportlab, in the Adobe CID font STSong-Light that PDF readers supply (no font file is
    needed, so none is embedded): the heading, each paragraph set to the full width in lines of 36 characters
    (one breaks inside ¥50,000, as Chinese typesetting does), and the table's columns 120 points apart."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    out = io.BytesIO()
    page = canvas.Canvas(out)
    y = 780
    page.setFont("STSong-Light", 16)
    page.drawString(72, y, ZH_HEADING)
    y -= 36
    page.setFont("STSong-Light", 11)
    for paragraph in ZH_PARAGRAPHS:
        for k in range(0, len(paragraph), 36):
            page.drawString(72, y, paragraph[k:k + 36])
            y -= 16
        y -= 16
    for row in ZH_TABLE:
        for column, cell in enumerate(row):
            page.drawString(72 + 120 * column, y, cell)
        y -= 16
    page.save()
    return out.getvalue()


def test_chinese_pdf(pruner):
    data = make_zh_pdf()
    assert "¥50,0" in ZH_PARAGRAPHS[0][:36] and not ZH_PARAGRAPHS[0][:36].endswith("¥50,000")
    text = decode_input(data).text
    assert text == "\n\n".join([ZH_HEADING, *ZH_PARAGRAPHS, "\n".join(rows_of(ZH_TABLE))])
    result = pruner.prune_bytes(data, ratio="1/3")
    check_extract(result, text)
    assert result.stats.input_format == "pdf" and result.stats.lang == "zh"


class LayoutPage:
    """What pypdf's layout mode gives for a page, written by hand, to check how its lines become paragraphs
    in cases a generated PDF does not easily produce."""

    def __init__(self, layout: str) -> None:
        self.layout = layout

    def extract_text(self, **kwargs) -> str:
        assert kwargs.get("extraction_mode") == "layout"
        return self.layout


def test_wrapped_chinese_lines_join_without_a_space_and_wide_gaps_make_table_rows():
    from catp.formats import page_paragraphs

    first, second = ZH_PARAGRAPHS[0][:30], ZH_PARAGRAPHS[0][30:]
    layout = f"  {ZH_HEADING}\n\n  {first}\n  {second}\n\n  项目      数量     金额\n  服务器    2台      ¥30,000\n"
    assert "\n\n".join(page_paragraphs(LayoutPage(layout))) == f"{ZH_HEADING}\n\n{ZH_PARAGRAPHS[0]}\n\n项目 | 数量 | 金额\n服务器 | 2台 | ¥30,000"


def test_a_wrapped_line_joins_by_its_own_script_not_by_the_paragraph_so_far():
    """Whether a wrapped line joins the next with a space depends on that line (mostly Chinese: no space), not on
    the paragraph built so far: English after Chinese lines keeps its spaces ("fee of USD 5,000"), and a Chinese
    line after English ones that breaks inside a number joins it whole ("¥50,000")."""
    from catp.formats import page_paragraphs

    zh_then_en = ["本许可协议由许可方与被许可方于二零二四年三月一日在上海签订，双方同意下列条款并遵守。",
                  "The Licensee shall pay a fee of",
                  "USD 5,000 on signing this deal."]
    en_then_zh = ["The Licensee pays the fee in yuan:",
                  "被许可方应向许可方支付许可费人民币伍万元整即¥50,0",
                  "00元，于签订之日起十日内付清，逾期按日计息。"]
    layout = "\n".join(f"  {line}" for line in zh_then_en) + "\n\n" + "\n".join(f"  {line}" for line in en_then_zh)
    assert "\n\n".join(page_paragraphs(LayoutPage(layout))).split("\n\n") == [
        zh_then_en[0] + "The Licensee shall pay a fee of USD 5,000 on signing this deal.",
        "The Licensee pays the fee in yuan:被许可方应向许可方支付许可费人民币伍万元整即¥50,000元，于签订之日起十日内付清，"
        "逾期按日计息。"]


def test_a_word_broken_at_a_hyphen_joins_the_next_line_without_a_space():
    """A lower-case start after a letter and a hyphen joins with no space, hyphen kept; a digit or a capital after
    the hyphen, or a hyphen after a digit, keeps the space."""
    from catp.formats import page_paragraphs

    lines = ["The Distributor shall not, during the term, market any non-",
             "compete products, and shall pay to the Supplier the compen-",
             "sation set out in Schedule A- 1. Invoices are due in 30 days, net-",
             "30 terms apply. All prices are in Exhibit B and the Price List B-",
             "Pricing for the prices of all products it sells in the Territory 2-",
             "year terms."]
    layout = "".join(f"  {line}\n" for line in lines)
    assert page_paragraphs(LayoutPage(layout)) == [
        "The Distributor shall not, during the term, market any non-compete products, and shall pay to the Supplier "
        "the compen-sation set out in Schedule A- 1. Invoices are due in 30 days, net- 30 terms apply. All prices are "
        "in Exhibit B and the Price List B- Pricing for the prices of all products it sells in the Territory 2- "
        "year terms."]


def test_list_items_and_justified_lines_from_a_layout_page():
    from catp.formats import page_paragraphs

    layout = ("  This  specification  proposes  three  things  that  every  implementation  must  provide  in full:\n"
              "  •   A standard way for applications to install new MIME related information, and to\n"
              "      remove it again.\n"
              "  •   A standard way of getting the MIME type for a file, from its name or contents.\n"
              "  Further, the existing databases have been merged into a single shared package.\n")
    assert "\n\n".join(page_paragraphs(LayoutPage(layout))).split("\n\n") == [
        "This specification proposes three things that every implementation must provide in full:",
        "• A standard way for applications to install new MIME related information, and to remove it again.",
        "• A standard way of getting the MIME type for a file, from its name or contents.",
        "Further, the existing databases have been merged into a single shared package."]


# -- pruning: the API, catp prune, catp decode ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["en.pdf", "en.docx", "zh.docx"])
def test_api_prunes_the_extracted_text(files, pruner, name):
    text = read_input(str(files[name])).text
    for result in (pruner.prune_bytes(files[name].read_bytes(), ratio="1/3"),
                   pruner.prune_file(files[name], ratio="1/3"), pruner.prune_file(str(files[name]), budget=60)):
        check_extract(result, text)
        assert result.stats.input_format == name.split(".")[1] and result.stats.encoding is None
        assert result.stats.output_tokens < result.stats.input_tokens


@pytest.mark.parametrize("name", ["en.pdf", "zh.docx"])
def test_cli_offsets_index_the_text_catp_decode_prints(files, name):
    decoded = catp("decode", str(files[name]))
    assert decoded.returncode == 0, decoded.stderr
    text = decoded.stdout.decode()
    assert text == read_input(str(files[name])).text  # exactly the text, nothing added
    proc = catp("prune", str(files[name]), "--ratio", "1/3", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["stats"]["input_format"] == name.split(".")[1]
    assert result["stats"]["output_tokens"] <= result["stats"]["budget"]
    assert result["text"] == result["gap_marker"].join(text[k["start"]:k["end"]] for k in result["kept"])


def test_a_pdf_named_txt_is_read_as_pdf_and_a_text_named_pdf_as_text(files, tmp_path, pruner):
    renamed = tmp_path / "contract.txt"
    renamed.write_bytes(files["en.pdf"].read_bytes())
    result = pruner.prune_file(renamed, ratio="1/3")
    assert result.stats.input_format == "pdf"
    check_extract(result, read_input(str(files["en.pdf"])).text)
    text_named_pdf = tmp_path / "notes.pdf"
    text_named_pdf.write_text(EN_PARAGRAPHS[0], encoding="utf-8")
    assert read_input(str(text_named_pdf)) == (EN_PARAGRAPHS[0], "utf-8", "text", ())


def test_stdin_and_decode_output_file(files, tmp_path):
    proc = catp("prune", "-", "--budget", "80", "--format", "json", stdin=files["en.docx"].read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stats"]["input_format"] == "docx"
    out = tmp_path / "en.txt"
    proc = catp("decode", str(files["en.pdf"]), "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
    assert out.read_text(encoding="utf-8") == read_input(str(files["en.pdf"])).text
    assert proc.stderr.decode().endswith(f"pdf, extracted text, {len(out.read_text(encoding='utf-8')):,} characters\n")


def test_encoding_applies_to_text_not_to_a_pdf(files):
    # `catp batch --encoding gb18030` over a folder also holding PDFs: the PDFs are still PDFs
    assert read_input(str(files["en.pdf"]), encoding="gb18030").format == "pdf"


# -- many documents: catp batch and a folder --------------------------------------------------------------------


def test_batch_and_prune_folder_read_pdf_docx_and_html(files, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, path in files.items():
        (folder / name).write_bytes(path.read_bytes())
    (folder / "notes.txt").write_text(" ".join(EN_PARAGRAPHS), encoding="utf-8")
    for command in ("batch", "prune"):
        proc = catp(command, str(folder), "--ratio", "1/3", "--quiet")
        assert proc.returncode == 0, proc.stderr
        rows = {Path(r["id"]).name: r for r in map(json.loads, proc.stdout.decode().splitlines())}
        assert sorted(rows) == ["en.docx", "en.html", "en.pdf", "notes.txt", "zh.docx"]
        for name, row in rows.items():
            assert row["error"] is None, row
            text = read_input(str(folder / name)).text
            assert row["text"] == " … ".join(text[k["start"]:k["end"]] for k in row["kept"])
            assert row["stats"]["output_tokens"] <= row["stats"]["budget"]
            assert row["stats"]["input_format"] == {"txt": "text"}.get(name.split(".")[1], name.split(".")[1])


def test_batch_gives_an_image_in_a_folder_an_error_row(files, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.docx").write_bytes(files["en.docx"].read_bytes())
    (folder / "scan.png").write_bytes(png_bytes())
    proc = catp("batch", str(folder), "--ratio", "1/3", "--quiet")  # a folder gives its document types only
    assert proc.returncode == 0 and len(proc.stdout.decode().splitlines()) == 1, proc.stderr
    proc = catp("batch", str(folder), "--ratio", "1/3", "--quiet", "--glob", "*")  # every file, the image too
    assert proc.returncode == 1, proc.stderr  # some rows are errors
    rows = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [r["error"] is None for r in rows] == [True, False]
    assert "a PNG image" in rows[1]["error"] and READS in rows[1]["error"]


# -- what cannot be read: one line each, exit 2 ------------------------------------------------------------------


@pytest.mark.parametrize("module, name, extra", [("pypdf", "en.pdf", "pdf"), ("docx", "en.docx", "docx"),
                                                 ("inscriptis", "en.html", "html")])
def test_without_the_extra_one_line_names_the_pip_install(files, monkeypatch, capsys, module, name, extra):
    # Both packages are installed here (the test extra): a None in sys.modules makes their import fail
    # as it does where the extra is not installed.
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(InputError, match=rf"pip install 'catp\[{extra}\]'"):
        decode_input(files[name].read_bytes())
    from catp.cli import main

    assert main(["prune", str(files[name]), "--budget", "50"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"pip install 'catp[{extra}]'" in err, err


def png_bytes() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (200, 100), "white").save(out, format="PNG")
    return out.getvalue()


def scanned_pdf(tmp_path: Path) -> bytes:
    from fpdf import FPDF

    image = tmp_path / "page.png"
    image.write_bytes(png_bytes())
    pdf = FPDF()
    pdf.add_page()
    pdf.image(str(image), x=10, y=10, w=180)  # an image, no text layer
    return bytes(pdf.output())


def blank_pdf(tmp_path: Path) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    return bytes(pdf.output())


@pytest.mark.parametrize("make", [scanned_pdf, blank_pdf])
def test_a_pdf_without_text_says_ocr_it(tmp_path, make):
    path = tmp_path / "scan.pdf"
    path.write_bytes(make(tmp_path))
    err = one_line_error(catp("prune", str(path), "--budget", "50"))
    assert "no text layer" in err and "OCR" in err and "empty" not in err


def test_a_pdf_with_a_scanned_page_among_text_pages_warns_in_the_result(tmp_path, pruner):
    from fpdf import FPDF

    image = tmp_path / "page.png"
    image.write_bytes(png_bytes())
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, EN_PARAGRAPHS[0])
    pdf.add_page()
    pdf.image(str(image), x=10, y=10, w=180)
    result = pruner.prune_bytes(bytes(pdf.output()), ratio="1/2")
    assert result.warnings[0] == ("input: 1 of 2 pages have no text (blank, or scanned: OCR them to prune their "
                                  "text too): page 2")


def encrypted(files, user: str, algorithm: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(files["en.pdf"]))
    writer.encrypt(user_password=user, owner_password="owner-secret", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_an_encrypted_pdf_is_a_clear_error(files, tmp_path, algorithm):
    path = tmp_path / "locked.pdf"
    path.write_bytes(encrypted(files, "user-secret", algorithm))
    err = one_line_error(catp("prune", str(path), "--budget", "50"))
    assert "encrypted PDF" in err and "password" in err


def test_a_pdf_with_an_owner_password_only_is_read(files, pruner):
    # Such files open without a password in any viewer (only printing or copying is restricted)
    data = encrypted(files, "", "AES-128")
    assert decode_input(data).text == read_input(str(files["en.pdf"])).text
    check_extract(pruner.prune_bytes(data, ratio="1/3"), decode_input(data).text)


def xlsx_bytes() -> bytes:
    # the members that make it a workbook to a sniffer (no Excel writer is a dependency here)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
        z.writestr("xl/worksheets/sheet1.xml", "<worksheet/>")
    return out.getvalue()


OTHER_BINARIES = {
    # an OLE compound file header (no .doc writer here): what Word 97-2003, Excel .xls and .ppt files start with
    "old.doc": (lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + b"Microsoft Word" * 40, "legacy Microsoft Office"),
    "sheet.xlsx": (xlsx_bytes, "an Excel workbook"),
    "scan.png": (png_bytes, "a PNG image"),
    "contract.txt.gz": (lambda: gzip.compress(" ".join(EN_PARAGRAPHS).encode(), mtime=0), "a gzip archive"),
}


@pytest.mark.parametrize("name", sorted(OTHER_BINARIES))
def test_other_binary_formats_are_named_in_one_line(tmp_path, pruner, name):
    make, what = OTHER_BINARIES[name]
    path = tmp_path / name
    path.write_bytes(make())
    err = one_line_error(catp("prune", str(path), "--budget", "50"))
    assert what in err and READS in err and "--encoding" not in err
    with pytest.raises(InputError, match=what):
        pruner.prune_bytes(make(), budget=50)


def test_a_cut_docx_is_a_clear_error(files):
    data = files["en.docx"].read_bytes()
    with pytest.raises(InputError, match="ZIP archive"):
        decode_input(data[: len(data) // 2])


# -- decode warnings: one helper for prune_bytes, prune_file, catp prune and batch ---------------------------------


def test_decode_warnings_come_back_with_the_text_and_reach_every_result(tmp_path):
    """Decode returns its warnings (bad UTF-8 replaced, pages without text) with the text, for the result's
    warnings: prune_file, catp prune --format json, catp decode and catp batch; decode_bytes, which returns
    only (text, encoding), raises them as Python warnings."""
    import warnings

    from catp.decode import decode_bytes

    cut = tmp_path / "cut.txt"
    data = ("第一条 甲方应于2024年3月1日前付款。" * 20).encode()[:-1]  # cut mid-character
    cut.write_bytes(data)
    note = f"{cut}: 1 invalid UTF-8 sequence replaced with U+FFFD"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read_input raises no Python warning
        assert read_input(str(cut)).warnings == (note,)
    with pytest.warns(UserWarning, match="1 invalid UTF-8 sequence"):
        decode_bytes(data)
    assert Pruner().prune_file(cut, ratio="1/2").warnings[0] == note
    proc = catp("prune", str(cut), "--ratio", "1/2", "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["warnings"][0] == note
    assert note in catp("decode", str(cut)).stderr.decode()
    out = tmp_path / "rows.jsonl"
    assert catp("batch", str(cut), "-o", str(out), "--ratio", "1/2").returncode == 0
    assert json.loads(out.read_text(encoding="utf-8"))["warnings"][0] == note


def test_prune_bytes_from_threads_gives_each_document_its_own_warnings():
    """Concurrent prune_bytes calls: each result says how many bad bytes its own input had (they were
    collected with warnings.catch_warnings, which is process-wide, and threads got each other's)."""
    from concurrent.futures import ThreadPoolExecutor

    pruner = Pruner()
    body = ("第一条 甲方应于2024年3月1日前向乙方付款，逾期按日支付违约金。" * 400).encode()
    inputs = [body[: len(body) // 2] + b"\xff" * (1 + k % 4) + body[len(body) // 2:] for k in range(24)]

    def bad_bytes(data: bytes) -> list[str]:
        return [w for w in pruner.prune_bytes(data, ratio="1/6").warnings if "invalid UTF-8" in w]

    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(bad_bytes, inputs))
    for k, notes in enumerate(found):
        n = 1 + k % 4
        assert notes == [f"input: {n} invalid UTF-8 sequence{'s' if n > 1 else ''} replaced with U+FFFD"], k


def test_a_docx_whose_text_part_unpacks_past_the_limit_is_refused_before_unpacking():
    data = make_docx(EN_HEADING, EN_PARAGRAPHS * 2000, EN_TABLE)  # repeated: its XML compresses well
    size = zipfile.ZipFile(io.BytesIO(data)).getinfo("word/document.xml").file_size
    assert len(data) * 10 < size
    with pytest.raises(InputError, match="unpacks to .* over 10 times the size limit"):
        decode_input(data, max_bytes=len(data))
    assert decode_input(data, max_bytes=size).format == "docx"  # the text is under its XML's size


def test_decode_from_threads_returns_each_input_its_own_warnings():
    """The decode step alone, where the old process-wide collection mixed threads' warnings up (11 of 80
    concurrent decodes of 900 KB got another's warning or none)."""
    from concurrent.futures import ThreadPoolExecutor

    body = ("第一条 甲方应于2024年3月1日前向乙方付款，逾期按日支付违约金。" * 6000).encode()
    inputs = [body[: len(body) // 2] + b"\xff" * (k % 3) + body[len(body) // 2:] for k in range(40)]
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(lambda data: decode_input(data).warnings, inputs))
    for k, notes in enumerate(found):
        n = k % 3
        assert notes == ((f"input: {n} invalid UTF-8 sequence{'s' if n > 1 else ''} replaced with U+FFFD",) if n
                         else ()), k



# -- HTML ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("heading, paragraphs, table, charset", [(EN_HEADING, EN_PARAGRAPHS, EN_TABLE, "utf-8"),
                                                                 (ZH_HEADING, ZH_PARAGRAPHS, ZH_TABLE, "gb18030")])
def test_html_gives_its_text_in_blocks_with_table_rows_and_no_markup(heading, paragraphs, table, charset):
    page = make_html(heading, paragraphs, table, charset)
    decoded = decode_input(page.encode(charset))
    assert (decoded.format, decoded.encoding) == ("html", charset)
    blocks = [heading, paragraphs[0], "\n".join(rows_of(table)), *paragraphs[1:], "* First item\n* Second item"]
    assert decoded.text == "\n\n".join(blocks)
    assert "hidden" not in decoded.text and "Not in the text" not in decoded.text and "<" not in decoded.text


def test_html_through_the_api_and_the_cli(files, pruner, tmp_path):
    text = read_input(str(files["en.html"])).text
    result = pruner.prune_file(files["en.html"], ratio="1/3")
    check_extract(result, text)
    assert result.stats.input_format == "html"
    proc = catp("prune", str(files["en.html"]), "--ratio", "1/3", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["text"] == result.text and row["stats"]["input_format"] == "html"
    assert catp("decode", str(files["en.html"])).stdout.decode() == text


def test_only_a_document_that_opens_as_html_is_html():
    mention = b"Paste <html><body>...</body></html> into the form, then press Send. " * 5
    assert decode_input(mention).format == "text"
    assert decode_input(b"\xef\xbb\xbf  <!-- saved -->\n<HTML><BODY><P>Fee: $5.</P></BODY></HTML>").text == "Fee: $5."
    with pytest.raises(InputError, match="an HTML file with no text"):
        decode_input(b"<!doctype html><html><head><script>x()</script></head><body> </body></html>")


def test_html_text_is_unescaped_once():
    """inscriptis unescapes text that lxml has already unescaped; catp escapes it back first, so a page that
    shows "&amp;times;" (a judgment's literal entity) or "&lt;" keeps it."""
    page = b"<!doctype html><p>A &amp;times; B, &amp;amp;, &lt;x&gt;, &times;, AT&amp;T</p>"
    assert decode_input(page).text == "A &times; B, &amp;, <x>, ×, AT&T"


def test_nul_and_lone_surrogates_become_replacement_characters_in_every_format(monkeypatch):
    """A PDF's odd font can map glyphs to NUL or to lone surrogates, and HTML can name them (&#0;, &#xD800;):
    tokenizers take neither, so extract (PDF, DOCX) and html_text give U+FFFD for each, through one function."""
    from catp import formats

    assert formats.tokenizable("a\x00b\ud800c\udfff\U0001f600") == "a\ufffdb\ufffdc\ufffd\U0001f600"
    odd = "Fee\x00: \udc80USD 5"
    monkeypatch.setattr(formats, "pdf_text", lambda data, source, notes, limit: odd)
    monkeypatch.setattr(formats, "docx_text", lambda data, source, limit: odd)
    for kind in (formats.PDF, formats.DOCX):
        data = make_docx("h", ["p"], [("a",)]) if kind == formats.DOCX else b"%PDF-1.4"
        assert formats.extract(data, kind, "x", 10**6, []) == "Fee\ufffd: \ufffdUSD 5"
    assert formats.html_text("<!doctype html><p>Fee&#0;: &#xD800;USD 5</p>", "x") == "Fee\ufffd: \ufffdUSD 5"


def test_html_holding_lone_surrogates_keeps_the_text_after_them():
    """An encoding the user gives can decode to lone surrogates (utf-7's "+2AA-", unicode_escape's "\\ud800");
    lxml then dropped the rest of the document ("Fee"). html_text makes them U+FFFD before parsing."""
    from catp import formats

    assert formats.html_text("a\ud800b", "x") == "a\ufffdb"
    assert formats.html_text("<!doctype html><p>Fee \udc80USD 5</p><p>Due in 30 days.</p>", "x") == \
        "Fee \ufffdUSD 5\n\nDue in 30 days."
    page = b"<!doctype html><p>Fee +2AA- USD 5</p><p>Due in 30 days.</p>"
    decoded = decode_input(page, encoding="utf-7")
    assert (decoded.format, decoded.text) == ("html", "Fee \ufffd USD 5\n\nDue in 30 days.")
    result = Pruner().prune_bytes(page, encoding="utf-7", ratio=1)
    assert result.text == decoded.text and result.stats.input_format == "html"


@pytest.mark.parametrize("name", ["cuad", "cail2019_cjrc", "tatqa"])
def test_every_gold_quote_of_real_documents_survives_html_and_docx(name):
    """Real documents (the shared evals data, read by path) written as HTML (a <p> per line, escaped), DOCX
    (a paragraph per line) and PDF (reportlab, lines wrapped): every gold quote is in the decoded text,
    whitespace aside. CAIL's texts hold
    literal entities (&times;) that a double unescape turned into other characters."""
    from _samples import _docs

    def squeeze(s: str) -> str:
        return "".join(s.split())

    def as_html(text: str) -> bytes:
        body = "".join(f"<p>{html.escape(line)}</p>" for line in text.split("\n") if line.strip())
        return f"<!DOCTYPE html><html><body>{body}</body></html>".encode()

    def as_docx(text: str) -> bytes:
        import docx

        document = docx.Document()
        for line in text.split("\n"):
            if line.strip():
                document.add_paragraph(line)
        out = io.BytesIO()
        document.save(out)
        return out.getvalue()

    def as_pdf(text: str) -> bytes:  # reportlab wraps each line as a paragraph; a CID font for Chinese
        from reportlab.lib.styles import ParagraphStyle
        from reportlab.pdfbase import pdfmetrics
        from reportlab.pdfbase.cidfonts import UnicodeCIDFont
        from reportlab.platypus import Paragraph, SimpleDocTemplate

        pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
        style = (ParagraphStyle("zh", fontName="STSong-Light", fontSize=10, leading=14, wordWrap="CJK")
                 if name.startswith("cail") else ParagraphStyle("en", fontName="Helvetica", fontSize=10, leading=12))
        out = io.BytesIO()
        SimpleDocTemplate(out).build([Paragraph(html.escape(line), style) for line in text.split("\n") if line.strip()])
        return out.getvalue()

    docs = _docs(name, 8)
    with_ampersand = [d for d in docs if any("&" in g["quote"] for g in d["gold"])][:1]  # what a double unescape broke
    for doc in [docs[0], *with_ampersand]:
        for fmt, make in (("html", as_html), ("docx", as_docx), ("pdf", as_pdf)):
            text, quotes = doc["text"], [g["quote"] for g in doc["gold"]]
            if fmt == "pdf" and not name.startswith("cail"):  # Helvetica has Latin-1 only; soft hyphens vanish
                text, quotes = _latin1(text), [_latin1(q) for q in quotes if "\xad" not in q]
            decoded = decode_input(make(text))
            assert decoded.format == fmt
            found = squeeze(decoded.text)
            lost = [q for q in quotes if squeeze(q) not in found]
            assert not lost, (doc["id"], fmt, lost[:3])


def _latin1(text: str) -> str:
    return text.encode("latin-1", "replace").decode("latin-1")


def _paged_pdf(pages: int, header: str | None, footer: bool, header_pages=None) -> tuple[bytes, list[str]]:
    """A PDF of `pages` pages by fpdf2, each with a paragraph of its own, a running header and a
    'Page N of M' footer (on the pages `header_pages` names, default all)."""
    from fpdf import FPDF

    class Paged(FPDF):
        def header(self):
            if header and (header_pages is None or self.page_no() in header_pages):
                self.set_font("Helvetica", size=9)
                self.cell(0, 8, header, new_x="LMARGIN", new_y="NEXT")
                self.ln(6)

        def footer(self):
            if footer:
                self.set_y(-15)
                self.set_font("Helvetica", size=9)
                self.cell(0, 8, f"Page {self.page_no()} of {{nb}}", align="C")

    pdf = Paged()
    bodies = [f"Clause {n}. The Supplier shall deliver lot {n * 7} of the Goods within {n + 20} days of the "
              f"order, and the Buyer shall pay USD {n * 1000:,} on delivery." for n in range(1, pages + 1)]
    for body in bodies:
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, body)
    return bytes(pdf.output()), bodies


def test_a_pdf_leaves_out_its_running_header_and_page_footer():
    data, bodies = _paged_pdf(5, "ACME Corp. - Supply Agreement - Confidential", footer=True)
    text = decode_input(data).text
    assert text.split("\n\n") == bodies  # every page's own text, in order, and nothing else


def test_a_header_on_few_pages_or_a_short_pdf_is_text():
    data, bodies = _paged_pdf(6, "ACME Corp. - Supply Agreement - Confidential", footer=False, header_pages={1, 4})
    text = decode_input(data).text  # on 2 of 6 pages: not running
    assert text.count("ACME Corp. - Supply Agreement - Confidential") == 2 and all(b in text for b in bodies)
    data, bodies = _paged_pdf(2, "ACME Corp. - Supply Agreement - Confidential", footer=True)
    text = decode_input(data).text  # two pages: too few to tell
    assert "Page 1 of 2" in text and "Page 2 of 2" in text and text.count("Confidential") == 2
