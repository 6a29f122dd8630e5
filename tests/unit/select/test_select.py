"""catp.select: the greedy fill. These tests pin what must hold whatever the ranking formula is
(the lead tunes it): deleted units never kept, one gap marker between runs, never past the budget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from catp import select as select_mod
from catp.document import Analysis, Document, Unit, UnitKind
from catp.rules.schema import SelectionPolicy
from catp.select import estimate, greedy, rank, runs, select
from catp.select.budget import Taker


def _doc(**fields) -> Document:
    """A Document over an Analysis of these fields (the tests fill in its columns)."""
    return Document.of(Analysis(**fields))


def make_doc(tokens, priority=None, value=None, deleted=None, scores=None, boost=None, edge=None,
             merge=None) -> Document:
    n = len(tokens)
    units = [Unit(i, 10 * i, 10 * i + 5, UnitKind.SENTENCE, i, tokens[i], (edge or [0] * n)[i], (merge or [0] * n)[i])
             for i in range(n)]
    doc = _doc(text="".join(f"w{i:04d}     " for i in range(n)), units=units)  # each unit says its own
    doc.columns.priority = list(priority or [0] * n)
    doc.columns.value = list(value or [float(p > 0) for p in doc.columns.priority])
    doc.columns.deleted = list(deleted or [False] * n)
    doc.columns.boost = list(boost or [0] * n)
    doc.columns.rules = [["r"] if p else [] for p in doc.columns.priority]
    doc.scores = dict(scores or {i: 0.0 for i in range(n)})
    return doc


def test_rank_is_a_permutation_of_the_live_units():
    doc = make_doc([5, 3, 7, 1, 4], priority=[0, 70, 0, 80, 0], deleted=[False, False, True, False, False],
                   scores={0: 0.3, 4: 0.9})
    assert sorted(rank(doc)) == [0, 1, 3, 4]


def test_a_protected_unit_outranks_a_worthless_one():
    # the worthless unit comes first in the text; the protected one must still go first
    doc = make_doc([5, 5], priority=[0, 80], value=[0.0, 1.0], scores={0: 0.0})
    assert rank(doc) == [1, 0]


def test_deleted_units_are_never_ranked_or_kept():
    doc = make_doc([1, 1, 1], priority=[90, 0, 0], deleted=[True, False, False])
    assert 0 not in rank(doc)
    assert not select(doc, budget=100, gap_tokens=1).kept[0]


def test_ties_break_by_position():
    doc = make_doc([3, 3, 3, 3])
    assert rank(doc) == [0, 1, 2, 3]


def test_gap_markers_are_paid_between_runs():
    doc = make_doc([4, 4, 4])
    # all three in one run: 12 tokens and no marker, whatever order they are taken in
    sel = select(doc, budget=12, gap_tokens=2)
    assert sel.kept == [True, True, True] and sel.estimated_tokens == 12
    sel = select(doc, budget=11, gap_tokens=2)
    assert not all(sel.kept) and sel.estimated_tokens <= 11


def test_two_runs_pay_one_marker():
    doc = make_doc([4, 9, 4], deleted=[False, True, False])  # the middle unit can never be kept
    assert select(doc, budget=10, gap_tokens=2).kept == [True, False, True]
    assert select(doc, budget=9, gap_tokens=2).kept.count(True) == 1


def test_selection_records_order_and_estimate():
    doc = make_doc([2, 9, 2], priority=[0, 80, 0], scores={0: 1.0, 2: 0.5})
    sel = select(doc, budget=100, gap_tokens=1)
    assert sel.kept == [True, True, True] and sorted(sel.added) == [0, 1, 2]
    assert sel.added[0] == rank(doc, 1)[0]
    assert sel.estimated_tokens == 2 + 9 + 2


def test_zero_budget_keeps_nothing():
    doc = make_doc([1, 1], priority=[100, 100])
    assert select(doc, budget=0, gap_tokens=0).kept == [False, False]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from([0, 0, 60, 80]), st.booleans(),
                          st.floats(0, 5, allow_nan=False)), min_size=1, max_size=25),
       st.integers(0, 200), st.integers(0, 4))
def test_estimate_never_exceeds_budget(spec, budget, gap):
    tokens, priority, deleted, scores = zip(*spec)
    doc = make_doc(list(tokens), priority=list(priority), deleted=list(deleted),
                   scores=dict(enumerate(scores)))
    sel = select(doc, budget, gap)
    assert sel.estimated_tokens <= budget
    # recompute the cost of what was kept, from scratch: units + one gap per run
    exact = sum(t for t, k in zip(tokens, sel.kept) if k) + gap * max(len(runs(sel.kept)) - 1, 0)
    assert exact == sel.estimated_tokens
    assert not any(k and d for k, d in zip(sel.kept, deleted))
    assert sorted(sel.added) == [i for i, k in enumerate(sel.kept) if k]


class _PlainTaker(Taker):
    """Taker without the early 'cannot fit' check, each cost counted from scratch with estimate()."""

    def cost(self, i):
        kept, doc, gap = self.sel.kept, self.doc, self.gap
        if kept[i]:
            return None
        group = self.group[i]
        take = [j for j in self.members[group] if not kept[j]] if group != -1 else [i]
        after = list(kept)
        for j in take:
            after[j] = True
        return estimate(doc, after, gap) - estimate(doc, kept, gap), take

    def take(self, i):
        return self._keep(self.cost(i))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.sampled_from([0, 0, 60, 80]), st.sampled_from([-1, -1, -1, 0, 1]),
                          st.floats(0, 5, allow_nan=False), st.integers(-1, 3), st.integers(-1, 2)),
                min_size=1, max_size=25),
       st.integers(0, 80), st.integers(0, 4))
def test_select_equals_a_plain_cost_count(spec, budget, gap):
    """Neither the early 'cannot fit' check in Taker.take nor Taker.cost's running count changes a decision,
    whatever the units' edges and merges (what a run starting at them does not spend)."""
    import pytest

    tokens, priority, group, scores, edge, merge = zip(*spec)
    doc = make_doc(list(tokens), priority=list(priority), scores=dict(enumerate(scores)), edge=list(edge),
                   merge=list(merge))
    doc.columns.group = list(group)
    fast = select(doc, budget, gap)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(greedy, "Taker", _PlainTaker)
        plain = select(doc, budget, gap)
    assert (fast.kept, fast.added, fast.estimated_tokens) == (plain.kept, plain.added, plain.estimated_tokens)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(-1, 3), st.integers(-1, 2), st.booleans(),
                          st.floats(0, 5, allow_nan=False)), min_size=1, max_size=25),
       st.integers(0, 80), st.integers(0, 4), st.data())
def test_run_starts_are_counted_as_a_run_holds_them(spec, budget, gap, data):
    """What the taker adds up, unit by unit and from a selection already made (as with a question), is the
    cost of the output counted from scratch: the units' tokens, for each run a gap marker less the
    tokens its first unit does not spend (edge) and the marker's merged token, no marker before the
    first run (whose first unit still spends no edge); never over the budget."""
    from catp.select import Selection, fill_by_value

    tokens, edge, merge, deleted, scores = zip(*spec)
    n = len(tokens)
    doc = make_doc(list(tokens), deleted=list(deleted), scores=dict(enumerate(scores)), edge=list(edge),
                   merge=list(merge))
    kept = [not d and data.draw(st.booleans()) for d in deleted]
    start = estimate(doc, kept, gap)
    selection = Selection(list(kept), estimated_tokens=start)
    fill_by_value(doc, max(budget, start), gap, selection)
    assert selection.estimated_tokens == estimate(doc, selection.kept, gap) <= max(budget, start)
    found = runs(selection.kept)
    by_hand = (sum(tokens[i] for i in range(n) if selection.kept[i])
               + sum(gap - edge[a] - merge[a] for a, _ in found[1:]) - (edge[found[0][0]] if found else 0))
    assert estimate(doc, selection.kept, gap) == by_hand


def test_runs():
    assert runs([]) == []
    assert runs([False, False]) == []
    assert runs([True, True, False, True, False, False, True, True]) == [(0, 1), (3, 3), (6, 7)]


def test_policy_weighs_information_against_facts():
    from catp.rules.schema import SelectionPolicy

    # unit 0: a protected fact of little information; unit 1: no fact, much information; room for one
    doc = make_doc([5, 5], priority=[80, 0], value=[1.0, 0.0], scores={0: 0.1, 1: 0.6})
    flat = dict(lead_weight=0.0, doc_lead_weight=0.0)
    assert select(doc, 5, 0, SelectionPolicy(information_weight=1.0, **flat)).kept == [True, False]
    assert select(doc, 5, 0, SelectionPolicy(information_weight=3.0, **flat)).kept == [False, True]


def test_policy_lead_weight_favours_a_sections_opening():
    from catp.rules.schema import SelectionPolicy

    doc = make_doc([5] * 10, scores={i: 1.0 if i else 0.8 for i in range(10)})
    assert select(doc, 5, 0, SelectionPolicy(lead_weight=0.0, doc_lead_weight=0.0)).kept[0] is False
    assert select(doc, 5, 0, SelectionPolicy(lead_weight=2.0, doc_lead_weight=0.0)).kept[0] is True


def test_a_unit_that_extends_a_kept_run_saves_its_gap_marker():
    from catp.rules.schema import SelectionPolicy

    # unit 0 goes first; then room for one of 1 (next to it: no marker) and 3 (apart: a marker),
    # and 3 is worth a little more per token of its own
    doc = make_doc([4, 4, 4, 4], priority=[90, 60, 0, 60], value=[10.0, 1.0, 0.0, 1.1])
    flat = SelectionPolicy(lead_weight=0.0, doc_lead_weight=0.0)
    assert select(doc, 10, 2, flat).kept == [True, True, False, False]
    assert select(doc, 8, 0, flat).kept == [True, False, False, True]  # no markers: value per token decides


def test_the_section_lead_starts_after_the_heading():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead

    doc = make_doc([5] * 6)
    doc.units[0].kind = doc.units[3].kind = UnitKind.HEADING
    lead = section_lead(doc, SelectionPolicy(lead_weight=2.0, lead_share=0.5, doc_lead_weight=0.0))
    assert lead[0] == lead[3] == 1.0  # headings are valued by their rules alone
    assert lead[1] == lead[4] == 3.0 and lead[1] > lead[2] >= 1.0


def test_a_tables_first_rows_weigh_more():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead

    doc = make_doc([5] * 7)
    for i in (1, 2, 3, 5):
        doc.units[i].kind = UnitKind.TABLE_ROW
    flat = dict(lead_weight=0.0, doc_lead_weight=0.0)
    assert section_lead(doc, SelectionPolicy(**flat)) == [1.0] * 7  # off by default
    lead = section_lead(doc, SelectionPolicy(table_lead_weight=1.0, table_lead_rows=2, **flat))
    assert lead == [1.0, 2.0, 1.5, 1.0, 1.0, 2.0, 1.0]  # each run of rows is a table of its own


def _table_doc(rows: list[str]) -> Document:
    """One table of rows (a leading space, an empty first cell, is not part of its unit)."""
    text = "\n".join(rows)
    units, start = [], 0
    for i, row in enumerate(rows):
        start = text.index(row, start)
        units.append(Unit(i, start + (row[0] == " "), start + len(row), UnitKind.TABLE_ROW, i, 5))
    return _doc(text=text, units=units)


def test_a_tables_lead_goes_to_its_data_rows_not_its_headers():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead

    rows = [" | 2019 | 2018", "Current assets |  | ", "Revenue | 1,200 | 1,100", "Costs | (300) | (250)",
            "Net | 900 | 850"]
    doc = _table_doc(rows)
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0}
    lead = section_lead(doc, SelectionPolicy(table_lead_weight=1.0, table_lead_rows=2, **flat))
    assert lead == [1.0, 1.0, 2.0, 1.5, 1.0]  # the year header and the group row are not counted


def test_a_row_of_amounts_with_no_label_is_data_not_a_header():
    from catp.select.tables import header_row

    headers = [" | 2019 | 2018", " | May 26, 2019 | ", "Current liabilities |  | ", " |  | (in thousands) |",
               " | 2019 (1) | 2018 | %Chg"]
    data = [" | $12,455 | $18,418", " | 336 | 2,523", " | 204.9 | (3.1)", "Revenue | 1,200 | 1,100"]
    assert [header_row(r) for r in headers] == [True] * len(headers)
    assert [header_row(r) for r in data] == [False] * len(data)


def test_a_longer_tables_last_data_row_weighs_more():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead

    rows = ["Cash | 10 | 9", "Receivables | 20 | 19", "Inventory | 30 | 29", " | 2019 | 2018", "Total | 60 | 57"]
    text = "\n".join(rows) + "\n\nNote.\n\n" + "\n".join(rows[:2])  # a short table's last row is in its lead
    units, start = [], 0
    for row in [*rows, "Note.", *rows[:2]]:
        start = text.index(row, start)
        kind = UnitKind.SENTENCE if row == "Note." else UnitKind.TABLE_ROW
        units.append(Unit(len(units), start + (row[0] == " "), start + len(row), kind, len(units), 5))
        start += len(row)
    doc = _doc(text=text, units=units)
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0, "table_lead_weight": 1.0, "table_lead_rows": 2}
    assert section_lead(doc, SelectionPolicy(**flat)) == [2.0, 1.5, 1.0, 1.0, 1.0, 1.0, 2.0, 1.5]  # off by default
    lead = section_lead(doc, SelectionPolicy(table_tail_weight=2.0, **flat))
    assert lead == [2.0, 1.5, 1.0, 1.0, 3.0, 1.0, 2.0, 1.5]  # the total, after a header row; not unit 7


def test_a_data_row_with_words_in_its_cells_weighs_table_word_row_weight():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead
    from catp.select.tables import word_row

    rows = ["Revenue | 1,200 | 1,100", "Leigh R Fox | 47 | Chief Financial Officer", "Vested | 20 | April 30, 2019",
            "Costs | (300) | 12.5%"]
    assert [word_row(r) for r in rows] == [False, True, True, False]
    doc = _table_doc(rows)
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0}
    assert section_lead(doc, SelectionPolicy(**flat)) == [1.0] * 4  # off by default
    assert section_lead(doc, SelectionPolicy(table_word_row_weight=0.5, **flat)) == [1.0, 0.5, 0.5, 1.0]
    lead = section_lead(doc, SelectionPolicy(table_word_row_weight=0.5, table_lead_weight=1.0, table_lead_rows=2,
                                             **flat))
    assert lead == [2.0, 0.75, 0.5, 1.0]  # still a data row: it counts for the lead


def test_a_data_row_with_a_blank_cell_weighs_table_blank_row_weight():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead
    from catp.select.tables import blank_row

    rows = ["Revenue | 1,200 | 1,100", "Unremitted earnings | — | 2,127", "Percentage of revenue | 12.7% |  | ",
            "Warrants | n/a | $ 504", "Costs | (300) | -4"]
    assert [blank_row(r) for r in rows] == [False, True, True, True, False]
    doc = _table_doc(rows)
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0}
    assert section_lead(doc, SelectionPolicy(**flat)) == [1.0] * 5  # off by default
    assert section_lead(doc, SelectionPolicy(table_blank_row_weight=0.5, **flat)) == [1.0, 0.5, 0.5, 0.5, 1.0]


def test_section_decay_weighs_a_sections_later_best_units_less():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead

    # two sections (unit 3 is a heading); the first's units are worth 4, 3 and 2, the second's 1
    doc = make_doc([10] * 5, value=[4.0, 3.0, 2.0, 0.0, 1.0])
    doc.units[3].kind = UnitKind.HEADING
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0}
    assert section_lead(doc, SelectionPolicy(**flat)) == [1.0] * 5  # off by default
    lead = section_lead(doc, SelectionPolicy(section_decay_weight=1.0, section_decay_tokens=10, **flat))
    assert lead == [1.0, 0.5, 1 / 3, 0.5, 1.0]  # ranked by value per token within each section (heading: 0)
    assert rank(doc, policy=SelectionPolicy(section_decay_weight=1.0, section_decay_tokens=10, **flat))[:3] == [0, 1, 4]
    assert rank(doc, policy=SelectionPolicy(**flat))[:3] == [0, 1, 2]


def test_a_short_line_that_introduces_a_table_is_not_decayed():
    from catp.document import Span
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead

    # one section of 10-token units: two table rows, then two lines a rule of category 'table' marks
    # (a table's intro), one of one unit and one of two
    doc = make_doc([10] * 5, value=[4.0, 3.0, 2.0, 2.0, 1.9])
    doc.units[0].kind = doc.units[1].kind = UnitKind.TABLE_ROW
    doc.analysis.text = doc.text[:9] + "\n" + doc.text[10:19] + "\n" + doc.text[20:29] + "\n" + doc.text[30:]
    doc.columns.rules = [["row"], ["row"], ["intro"], ["intro"], ["intro"]]
    doc.analysis.spans = [Span(20, 25, "table", "intro", 92), Span(30, 45, "table", "intro", 92)]
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0, "section_decay_weight": 1.0, "section_decay_tokens": 10}
    assert section_lead(doc, SelectionPolicy(**flat)) == [1.0, 0.5, 1 / 3, 0.25, 0.2]
    lead = section_lead(doc, SelectionPolicy(table_intro_tokens=10, **flat))
    assert lead == [1.0, 0.5, 1.0, 0.25, 0.2]  # the short line only; it still counts for those after it
    doc.analysis.spans = [Span(20, 25, "amount", "intro", 92)]  # a rule of another category
    assert section_lead(doc, SelectionPolicy(table_intro_tokens=10, **flat))[2] == 1 / 3


def test_lead_tokens_bound_the_section_lead_in_tokens():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead

    doc = make_doc([10] * 8)
    policy = SelectionPolicy(lead_weight=4.0, lead_tokens=20, doc_lead_weight=0.0)
    assert section_lead(doc, policy) == [5.0, 3.0] + [1.0] * 6  # however long the section is


def test_doc_lead_tokens_widen_the_documents_lead_to_its_first_tokens():
    from catp.rules.schema import SelectionPolicy
    from catp.select import section_lead

    doc = make_doc([10] * 8)  # 5% of 8 units is under one unit: the lead is the first unit's alone
    policy = SelectionPolicy(lead_weight=0.0, doc_lead_weight=4.0)
    assert section_lead(doc, policy) == [5.0] + [1.0] * 7
    policy = SelectionPolicy(lead_weight=0.0, doc_lead_weight=4.0, doc_lead_tokens=40)  # the first 4 units
    assert section_lead(doc, policy) == [5.0, 4.0, 3.0, 2.0] + [1.0] * 4
    long_doc = make_doc([10] * 200)  # 5% of 200 units (10) is more than 40 tokens' 4: the share holds
    assert section_lead(long_doc, policy)[:11] == section_lead(long_doc, SelectionPolicy(
        lead_weight=0.0, doc_lead_weight=4.0))[:11]


def test_a_run_start_does_not_spend_its_edge_or_the_merged_marker_token():
    # unit 1 holds 6 tokens, 2 of them the whitespace before it ("\n\n", then a word that a gap marker's
    # last space merges into): opening the output it costs 4; after unit 0 and a marker of 3, 3 - 2 - 1 more
    doc = make_doc([5, 6], deleted=[True, False], edge=[0, 2], merge=[1, 1])
    assert select(doc, budget=4, gap_tokens=3).kept == [False, True]
    assert select(doc, budget=3, gap_tokens=3).kept == [False, False]
    doc.columns.deleted[0] = False
    sel = select(doc, budget=5 + 6, gap_tokens=3)  # one run: every token of both units
    assert sel.kept == [True, True] and sel.estimated_tokens == 11
    doc = make_doc([5, 1, 6], deleted=[False, True, False], edge=[0, 0, 2], merge=[1, 1, 1])
    sel = select(doc, budget=5 + 3 - 2 - 1 + 6, gap_tokens=3)  # two runs
    assert sel.kept == [True, False, True] and sel.estimated_tokens == 11


def test_a_span_too_long_for_the_budget_is_taken_unit_by_unit():
    # units 0-2 are one span kept whole (30 tokens) and unit 3 is filler: with a budget of 12 the span can
    # never fit whole, so its best unit is kept on its own rather than nothing of it
    doc = make_doc([10, 10, 10, 2], priority=[0, 80, 0, 0])
    doc.columns.group = [0, 0, 0, -1]
    assert select(doc, budget=12, gap_tokens=0).kept == [False, True, False, True]
    assert select(doc, budget=32, gap_tokens=0).kept == [True, True, True, True]  # it fits: whole


def test_a_repeated_text_counts_its_facts_once():
    # units 0 and 2 say the same (a page footer with a date), unit 1 a fact worth a little less;
    # room for two units: the footer once and the other fact, not the footer twice
    doc = make_doc([3, 3, 3], priority=[80, 70, 80], value=[2.0, 1.2, 2.0], scores={0: 0.0, 1: 0.0, 2: 0.0})
    doc.analysis.text = "Page 9 1/2/2020\nPayment due.\nPage 9 1/2/2020"
    doc.analysis.units = [Unit(0, 0, 15, UnitKind.SENTENCE, 0, 3), Unit(1, 16, 28, UnitKind.SENTENCE, 1, 3),
                 Unit(2, 29, 44, UnitKind.SENTENCE, 2, 3)]
    from catp.rules.schema import SelectionPolicy

    flat = SelectionPolicy(lead_weight=0.0, doc_lead_weight=0.0)
    assert select(doc, 7, 1, flat).kept.count(True) == 2
    assert select(doc, 7, 1, flat).kept[1]
    doc.analysis.text = "Page 9 1/2/2020\nPayment due.\nPage 8 1/2/2020"  # another page: its own facts
    assert select(doc, 7, 1, flat).kept == [True, False, True]


def _finding_doc(words: list[str], tokens: int = 3) -> Document:
    """One unit per word, each a finding span (rule priority 68) of its own."""
    from catp.select.policy import fact_weight
    from catp.document import Action, make_span

    doc = make_doc([tokens] * len(words), priority=[68] * len(words), value=[fact_weight(68)] * len(words))
    doc.analysis.text, doc.analysis.units, doc.analysis.spans, at = "", [], [], 0
    for i, word in enumerate(words):
        doc.analysis.text += word + " "
        doc.units.append(Unit(i, at, at + len(word), UnitKind.SENTENCE, i, tokens))
        doc.spans.append(make_span(at, at + len(word.rstrip(".!")), "finding", "r", 68, Action.PROTECT))
        at += len(word) + 1
    return doc


def test_distinct_facts_count_a_finding_kept_elsewhere_once():
    # units 0 and 1 name the same finding in other words' company; room for two units
    doc = _finding_doc(["fever", "Fever.", "rash"])
    doc.columns.value[0] = doc.columns.value[1] = 1.5 * doc.columns.value[2]  # the fever units hold a little more
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0}
    assert select(doc, 7, 1, SelectionPolicy(**flat)).kept == [True, True, False]
    assert select(doc, 7, 1, SelectionPolicy(distinct_facts=0.0, **flat)).kept == [True, False, True]


def test_distinct_facts_weigh_a_finding_by_its_occurrences():
    # room for one unit: "pain" is named three times, "rash" once
    doc = _finding_doc(["rash", "pain", "Pain.", "pain!"])
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0}
    assert select(doc, 3, 1, SelectionPolicy(distinct_facts=0.0, **flat)).kept == [True, False, False, False]
    assert select(doc, 3, 1, SelectionPolicy(distinct_facts=0.5, **flat)).kept == [False, True, False, False]
    facts, held, holders = select_mod.distinct_facts(doc, 0.5)
    assert holders == [[0], [1, 2, 3]] and held[1] == [(1, facts[1])]
    assert facts[1] == doc.columns.value[1] * 3 ** 0.5 and facts[0] == doc.columns.value[0]


def _greedy_faults(doc, budget: int, gap: int, sel) -> list[str]:
    """Replays sel.added and returns what breaks the greedy's promise: each take (a unit with its group) is,
    when it is made, at least as dense as every unit that fits then, and once done no unit fits."""
    from catp.select import DEFAULT_POLICY, Selection
    from catp.select.ranking import make_density, said_texts

    n = len(doc.units)
    texts = said_texts(doc)
    groups = Taker(doc, budget, gap, Selection([False] * n, [], 0)).group  # a span too long for the budget: none

    def state(kept, spent):
        covered = set().union(*(doc.columns.term_sets[i] for i in range(n) if kept[i])) if doc.columns.term_sets else set()
        said = {texts[i] for i in range(n) if kept[i]}
        return make_density(doc, DEFAULT_POLICY, gap, covered, kept, texts, said)

    def fits(kept, spent, u):
        trial = Selection(list(kept), [], spent)
        return bool(Taker(doc, budget, gap, trial).take(u))

    faults, kept, spent, k = [], [False] * n, 0, 0
    while True:
        density = state(kept, spent)
        fitting = {u: density(u) for u in range(n) if not kept[u] and not doc.columns.deleted[u] and fits(kept, spent, u)}
        if k == len(sel.added):
            if fitting:
                faults.append(f"units {sorted(fitting)} still fit at the end")
            return faults
        take = [sel.added[k]]
        while groups[take[0]] != -1 and k + len(take) < len(sel.added) and groups[sel.added[k + len(take)]] == groups[take[0]]:
            take.append(sel.added[k + len(take)])
        best = max(density(u) for u in take)
        denser = [u for u, d in fitting.items() if d > best + 1e-9 * max(1.0, abs(best))]
        if denser:
            faults.append(f"take {take} (density {best}) while {denser} fit and were denser")
        trial = Selection(list(kept), [], spent)
        taken = Taker(doc, budget, gap, trial).take(take[0])
        assert sorted(taken) == sorted(take), (taken, take)
        kept, spent, k = trial.kept, trial.estimated_tokens, k + len(take)


def _random_doc(rng, n_max=40):
    """A small random document with everything the greedy must handle: 0-token units (a join that frees
    budget), edges and marker merges, deleted units, groups, shared terms and units saying the same text."""
    import dataclasses
    import math

    n = rng.randint(1, n_max)
    tokens = [rng.randint(0, 6) for _ in range(n)]
    terms = [set(rng.sample("abcdef", rng.randint(0, 3))) for _ in range(n)]
    doc = make_doc(tokens, priority=[rng.choice([0, 0, 60]) for _ in range(n)],
                   scores={i: rng.choice([0.0, 0.0, 1.0, 2.5]) for i in range(n)},
                   deleted=[rng.random() < 0.1 for _ in range(n)],
                   edge=[rng.choice([0, 0, 1, 2]) for _ in range(n)], merge=[rng.choice([0, 1]) for _ in range(n)])
    doc.analysis.units = [dataclasses.replace(u, edge=min(u.edge, u.tokens)) for u in doc.units]  # edge <= tokens
    doc.analysis.text = "".join(f"w{rng.choice(range(n if rng.random() < 0.7 else 3)):04d}     " for _ in range(n))
    doc.columns.group = [rng.choice([-1] * 6 + [0, 1]) for _ in range(n)]
    doc.columns.terms = [sorted(t) for t in terms]
    doc.columns.term_sets = [frozenset(t) for t in terms]
    doc.analysis.term_weight = {t: math.log(1 + n / sum(t in ts for ts in terms)) for ts in terms for t in ts}
    return doc


def test_fill_by_value_is_greedy_with_and_without_setting_units_aside(monkeypatch):
    """Over 1,500 seeded random documents, whether unfit units are set aside early (after 1-3 quiet pops) or
    never: every take is at least as dense as any unit that fits then, none fits at the end, the
    estimate is exact and within the budget."""
    import random

    rng = random.Random(5)
    for _ in range(1500):
        doc = _random_doc(rng)
        budget, gap = rng.randint(0, 60), rng.randint(0, 3)
        for settle in (rng.choice([1, 2, 3]), -1):
            monkeypatch.setattr(greedy, "SETTLE_AFTER", settle)
            sel = select(doc, budget, gap)
            assert _greedy_faults(doc, budget, gap, sel) == [], (settle, budget, gap)
            assert sel.estimated_tokens == estimate(doc, sel.kept, gap) <= max(budget, 0)


def test_setting_unfit_units_aside_rarely_changes_the_choice(monkeypatch):
    """Setting aside changes which of two equally dense units the heap meets first (an entry set aside no
    longer sits on top), nothing else: on 1,000 random documents the kept units are the same in most."""
    import random

    rng, same = random.Random(7), 0
    for _ in range(1000):
        doc = _random_doc(rng)
        budget, gap = rng.randint(0, 60), rng.randint(0, 3)
        monkeypatch.setattr(greedy, "SETTLE_AFTER", 1)
        early = select(doc, budget, gap).kept
        monkeypatch.setattr(greedy, "SETTLE_AFTER", -1)
        same += early == select(doc, budget, gap).kept
    assert same >= 900, same


def test_setting_aside_happens_and_keeps_the_output(monkeypatch):
    """The early set-aside does drop units from the heap on a full budget, with the same result here."""
    doc = make_doc([5, 5, 1, 9, 9, 9, 9], scores={0: 5.0, 1: 4.0, 2: 0.1, 3: 1.0, 4: 1.0, 5: 1.0, 6: 1.0})
    monkeypatch.setattr(greedy, "SETTLE_AFTER", 1)
    calls = []
    unfit_of = greedy.Aside.unfit_of
    monkeypatch.setattr(greedy.Aside, "unfit_of", lambda self, heap: calls.append(len(heap)) or unfit_of(self, heap))
    sel = select(doc, 11, 0)
    assert sel.kept == [True, True, True, False, False, False, False] and sel.added[-1] == 2
    assert calls


def test_fill_by_value_goes_on_when_the_last_fitting_unit_frees_another(monkeypatch):
    """Taking the only unit that fits (1 token next to a kept run) makes its 0-token neighbour fit (it
    now extends the run)."""
    monkeypatch.setattr(greedy, "SETTLE_AFTER", 1)
    doc = make_doc([4, 1, 0, 9], scores={0: 5.0, 1: 0.1, 2: 0.05, 3: 3.0})
    sel = select(doc, 5, 2)
    assert (sel.kept, sel.added, sel.estimated_tokens) == ([True, True, True, False], [0, 1, 2], 5)


def test_fill_by_value_goes_on_when_two_units_fit(monkeypatch):
    """Two units fit, but not both: the denser is taken."""
    monkeypatch.setattr(greedy, "SETTLE_AFTER", 1)
    doc = make_doc([1, 4, 1, 9], scores={0: 0.1, 1: 5.0, 2: 2.0, 3: 3.0})
    sel = select(doc, 5, 2)
    assert (sel.kept, sel.added, sel.estimated_tokens) == ([False, True, True, False], [1, 2], 5)



def test_a_group_set_aside_comes_back_when_another_members_neighbour_is_taken(monkeypatch):
    """Group 0 is units 11 and 14. Taking unit 13 makes the group cheaper (14 would extend that run), so unit 11,
    set aside earlier as too dear, must come back: it is denser than unit 7, taken next without it. (Found
    by the random check above; 1 document in about 9,000 hits it.)"""
    import math

    tokens = [5, 3, 1, 6, 6, 6, 5, 3, 3, 2, 3, 0, 1, 0, 6, 0]
    doc = make_doc(tokens, priority=[0, 60, 0, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0, 60, 0],
                   scores=dict(enumerate([0.0, 0.0, 2.5, 0.0, 0.0, 0.0, 2.5, 1.0, 1.0, 2.5, 2.5, 1.0, 2.5, 1.0, 0.0, 0.0])),
                   edge=[0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0], merge=[1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0])
    doc.columns.group = [-1, -1, -1, -1, -1, -1, -1, -1, 1, -1, 1, 0, -1, -1, 0, -1]
    terms = [["a"], ["e", "f"], [], [], [], ["b", "d"], ["a", "d", "f"], ["b"], ["b", "c", "e"], ["e"], [], ["a", "d"], [],
             [], ["a", "c", "f"], []]
    doc.columns.terms = terms
    doc.columns.term_sets = [frozenset(t) for t in terms]
    doc.analysis.term_weight = {t: math.log(1 + len(terms) / sum(t in ts for ts in terms)) for ts in terms for t in ts}
    doc.analysis.text = "".join(f"w{k:04d}     " for k in (0, 0, 12, 10, 0, 0, 10, 2, 8, 15, 0, 1, 2, 13, 1, 3))
    monkeypatch.setattr(greedy, "SETTLE_AFTER", 2)
    sel = select(doc, 13, 3)
    assert _greedy_faults(doc, 13, 3, sel) == []
    assert sel.kept[11] and sel.kept[14]


def test_a_long_span_kept_whole_weighs_less_with_whole_span_tokens():
    # units 0-2 are one sentence a rule keeps whole (90 tokens), unit 3 a short one: per token the long
    # sentence is worth more, until whole_span_tokens scales it by 30 / 90
    doc = make_doc([30, 30, 30, 20], priority=[80] * 4, value=[3.0, 3.0, 3.0, 1.5])
    doc.columns.group = [0, 0, 0, -1]
    flat = {"lead_weight": 0.0, "doc_lead_weight": 0.0}
    plain, capped = SelectionPolicy(**flat), SelectionPolicy(whole_span_tokens=30, **flat)
    assert select_mod.long_span_factor(doc, plain) is None
    assert select_mod.long_span_factor(doc, capped) == [30 / 90] * 3 + [1.0]
    assert select(doc, budget=90, gap_tokens=0, policy=plain).kept == [True, True, True, False]
    assert select(doc, budget=90, gap_tokens=0, policy=capped).kept == [False, False, False, True]
    assert rank(doc, policy=capped)[0] == 3 and rank(doc, policy=plain)[0] == 0
    doc.columns.group = [0, 0, 0, 3]  # unit 3 is a span of 20 tokens kept whole: below the cap, sqrt(30 / 20)
    assert select_mod.long_span_factor(doc, capped)[3] == (30 / 20) ** 0.5


def test_select_leaves_no_reference_cycles():
    """A prune runs with the cyclic GC paused: state that only it can free (a closure referring back to
    itself) would stay in memory after every prune, and fresh memory costs page faults."""
    import gc

    doc = make_doc([5, 3, 7, 1, 4, 2], priority=[0, 70, 0, 80, 0, 0], scores={0: 0.3, 2: 0.5, 4: 0.9, 5: 0.1})
    doc.columns.terms = [["a", "b"], ["b"], ["c"], [], ["a", "d"], ["d"]]
    doc.columns.term_sets = [frozenset(t) for t in doc.columns.terms]
    doc.analysis.term_weight = {"a": 1.0, "b": 2.0, "c": 0.5, "d": 1.5}
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        select(doc, budget=12, gap_tokens=1)
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def test_question_first_takes_a_relevant_units_short_line_then_a_long_lines_neighbours():
    from catp.select import question_first
    from catp.select.question import paragraphs

    # two lines: units 0-2 (30 tokens) and 3-9 (420 tokens, over SHORT_PARAGRAPH_TOKENS); the whole text (450)
    # is over the question's share (320), so unit 1 brings its line and unit 5 only its neighbours
    doc = make_doc([10] * 3 + [60] * 7, scores={**{i: 0.0 for i in range(10)}, 1: 2.0, 5: 1.0})
    doc.analysis.text = "".join(f"w{i:04d}" + ("\n    " if i == 2 else "     ") for i in range(10))
    assert paragraphs(doc) == [[0, 1, 2]] * 3 + [list(range(3, 10))] * 7
    sel = question_first(doc, budget=400, gap_tokens=0, share=0.8, policy=SelectionPolicy())
    assert sel.added[:6] == [0, 1, 2, 5, 6, 4]
    assert sel.estimated_tokens == estimate(doc, sel.kept, 0) <= 400


def _pieces_doc(pieces: list[str]) -> Document:
    """One unit per piece, joined by spaces."""
    text = " ".join(pieces)
    units, start = [], 0
    for i, piece in enumerate(pieces):
        start = text.index(piece, start)
        units.append(Unit(i, start, start + len(piece), UnitKind.CLAUSE, 0, 2))
        start += len(piece)
    return _doc(text=text, units=units)


def test_a_run_without_a_letter_or_digit_is_not_kept():
    from catp.select import drop_bare_runs

    doc = _pieces_doc(["Alpha Corp.", "(", "hereinafter", ",", "the Licensor", "§", "2024", "_", "(", "甲方"])
    kept = [True, True, False, True, False, True, False, True, False, True]
    assert drop_bare_runs(doc, kept) == 3  # ',' '§' '_' alone; '(' joins a word, as does any run with a digit
    assert kept == [True, True, False, False, False, False, False, False, False, True]
    kept = [False, False, False, False, False, True, True, True, True, False]
    assert drop_bare_runs(doc, kept) == 0
    assert kept == [False, False, False, False, False, True, True, True, True, False]


def test_pruned_contracts_keep_no_bare_punctuation():
    """A deleted phrase or a detached address inside a kept sentence left a lone '(' or ',' as a run of
    its own (examples/contract_en.txt at 1/6 kept both)."""
    import re
    from pathlib import Path

    from catp import Pruner

    root = Path(__file__).resolve().parents[3] / "examples"
    pruner = Pruner(domain="legal")
    for name in ("contract_en.txt", "contract_zh.txt"):
        text = (root / name).read_text(encoding="utf-8")
        for ratio in ("1/10", "1/6", "1/3"):
            result = pruner.prune(text, ratio=ratio)
            bare = [text[k.start : k.end] for k in result.kept if not re.search(r"[^\W_]", text[k.start : k.end])]
            assert not bare, (name, ratio, bare)
