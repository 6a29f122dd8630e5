"""render.py: kept spans, extract text (pieces joined by the gap marker), dropped-protected report, HTML."""

from __future__ import annotations

import html
import re

import pytest

from catp.document import Action, Analysis, Decision, Document, Span, Unit, UnitKind
from catp.pipeline import Pruner
from catp.render import extract_text, kept_spans, protected_report, to_html

TEXT = "Alpha one. Beta two. Gamma three. Delta four."
GAP = " … "


def make_doc(text: str = TEXT) -> Document:
    units, start = [], 0
    for i, piece in enumerate(text.split(" ")):
        start = text.index(piece, start)
        units.append(Unit(i, start, start + len(piece), UnitKind.CLAUSE, i))
        start += len(piece)
    doc = Document.of(Analysis(text=text, units=units))
    n = len(units)
    doc.columns.rules = [[] for _ in range(n)]
    doc.columns.priority, doc.columns.deleted = [0] * n, [False] * n
    return doc


def test_runs_of_kept_units_become_spans():
    doc = make_doc()
    doc.columns.rules[1] = ["r.one"]
    spans = kept_spans(doc, [True, True, False, False, True, False, True, True])
    assert [(s.start, s.end) for s in spans] == [(0, 10), (21, 26), (34, 45)]
    assert [doc.text[s.start : s.end] for s in spans] == ["Alpha one.", "Gamma", "Delta four."]
    assert spans[0].reasons == ["score", "r.one"] and spans[1].reasons == ["score"]


def test_text_is_the_kept_pieces_joined_by_the_gap_marker():
    doc = make_doc()
    kept = [True, False, True, True, False, False, False, True]
    spans = kept_spans(doc, kept)
    out = extract_text(doc, spans, GAP)
    assert out == GAP.join(doc.text[s.start : s.end] for s in spans) == "Alpha … Beta two. … four."


@pytest.mark.parametrize("kept", [[False] * 8, [True] * 8])
def test_nothing_and_everything(kept):
    doc = make_doc()
    out = extract_text(doc, kept_spans(doc, kept), GAP)
    assert out == ("" if not any(kept) else TEXT)


def test_protected_report_counts_found_kept_dropped():
    doc = make_doc()
    doc.analysis.spans = [Span(0, 5, "entity", "r.name", 70), Span(6, 10, "number", "r.num", 60),
                 Span(11, 20, "number", "r.num", 60), Span(21, 26, "boilerplate", "r.del", 50, Action.DELETE),
                 Span(27, 33, "term", "r.boost", 40, Action.BOOST)]
    spans = kept_spans(doc, [True, True, False, False, False, False, False, False])
    dropped, per_category = protected_report(doc, spans)
    assert [(d.text, d.rule_id, d.category, d.priority) for d in dropped] == [("Beta two.", "r.num", "number", 60)]
    assert per_category == {"entity": {"found": 1, "kept": 1, "dropped": 0},
                            "number": {"found": 2, "kept": 1, "dropped": 1}}


def test_a_span_half_kept_is_dropped():
    doc = make_doc()
    doc.analysis.spans = [Span(6, 14, "number", "r.num", 60)]  # "one. Bet" crosses a unit edge
    dropped, _ = protected_report(doc, kept_spans(doc, [False, True, False, False, False, False, False, False]))
    assert len(dropped) == 1


def test_html_escapes_text_and_reasons():
    text = "<script>alert('x')</script> & \"quotes\" 5 < 6. Then more > text here."
    pruner = Pruner(domain="general")
    doc = pruner.analyse(text, budget=6)
    doc.columns.rules[0] = ["evil'><img src=x onerror=alert(1)>"]
    doc.decisions[0] = Decision(kept=True, reasons=doc.columns.rules[0])
    result = pruner.finish(doc)
    page = to_html(doc, result)
    assert "<script>" not in page and "<img" not in page
    assert html.escape("<script>alert('x')</script>") in page
    # every character of the input is in the page, escaped, in order
    body = re.sub(r"<[^>]+>", "", page.split("<div>", 1)[1])
    assert html.unescape(body) == text


def test_html_marks_kept_dropped_and_deleted():
    text = ("The fee is $5,000 payable on March 5, 2024. For the avoidance of doubt, nothing else. "
            "The weather was pleasant and the meeting was long and uneventful.")
    pruner = Pruner(domain="general")
    doc = pruner.analyse(text, budget=14)
    result = pruner.finish(doc)
    page = to_html(doc, result)
    assert page.count("class='kept'") == sum(d.kept for d in doc.decisions) > 0
    assert page.count("class='del'") == sum(doc.columns.deleted) > 0
    assert page.count("class='drop'") == len(doc.units) - page.count("class='kept'") - page.count("class='del'")
    assert f"{result.stats.input_tokens} → {result.stats.output_tokens} tokens" in page


def test_innermost_sections_is_the_last_section_holding_each_unit():
    """dropped_warning's section of each lost span, in one sweep: the same as scanning every section for
    each unit (the last in the list that holds it), over random nested and overlapping sections."""
    import random
    from types import SimpleNamespace

    from catp.render import innermost_sections

    rng = random.Random(11)
    for _ in range(500):
        n = rng.randint(1, 40)
        key = []
        for _ in range(rng.randint(0, 8)):
            first = rng.randint(0, n - 1)
            key.append(SimpleNamespace(first=first, end=rng.randint(first + 1, n)))
        key.sort(key=lambda s: s.first)
        at = [rng.randint(-1, n - 1) for _ in range(rng.randint(0, 30))]
        expected = [next((s for s in reversed(key) if s.first <= i < s.end), None) for i in at]
        assert list(map(id, innermost_sections(key, at))) == list(map(id, expected))
