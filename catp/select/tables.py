"""Table priors (policy fields table_*): a table's first data rows and its last weigh more, rows of words
or with blank cells less, and a short line a `table` rule marks (a table's intro) is told apart."""

from __future__ import annotations

import re

from catp.document import Document, UnitKind
from catp.select.policy import SelectionPolicy


def table_intros(doc: Document, max_tokens: int) -> set[int]:
    """The units, not table rows, that a rule of category 'table' marks, on a line of at most max_tokens
    tokens: a table's title or intro ('... were as follows (in thousands):'). On TAT-QA dev such short
    lines hold 3-4 gold items per 100 tokens (most of them whole evidence paragraphs), as many as a
    table's first rows; longer ones 1-1.5, like other prose."""
    table_rules = {s.rule_id for s in doc.spans if s.category == "table"}
    units, text, rules = doc.units, doc.text, doc.columns.rules
    out: set[int] = set()
    line: list[int] = []  # the units of the current line
    for i in range(len(units) + 1):
        if i == len(units) or (line and "\n" in text[units[i - 1].end : units[i].start]):
            if sum(units[j].tokens for j in line) <= max_tokens:
                out.update(j for j in line if units[j].kind is not UnitKind.TABLE_ROW
                           and not table_rules.isdisjoint(rules[j]))
            line = []
        line.append(i)
    return out


def table_lead(doc: Document, policy: SelectionPolicy, factor: list[float]) -> None:
    """1 + table_lead_weight at a table's first data row, falling to 1 at its table_lead_rows-th, and
    1 + table_tail_weight at its last when that is past the lead. Header rows (header_row) get no lead
    and are not counted: on TAT-QA dev they hold far fewer gold items per token than the first data rows,
    and past the third data row a table's last row (its total, its closing balance) holds more than the rows
    before it (the figures: docs/journal/2026-11-evals-rounds.md). A data row with words in its value cells
    weighs table_word_row_weight as much (word_row), one with a blank cell table_blank_row_weight (blank_row)."""
    text, units = doc.text, doc.units
    for rows in _data_rows(doc):
        for row, i in enumerate(rows):
            factor[i] *= 1.0 + policy.table_lead_weight * max(0.0, 1.0 - row / policy.table_lead_rows)
            row_text = text[units[i].start : units[i].end]
            if policy.table_word_row_weight != 1.0 and word_row(row_text):
                factor[i] *= policy.table_word_row_weight
            if policy.table_blank_row_weight != 1.0 and blank_row(row_text):
                factor[i] *= policy.table_blank_row_weight
        if len(rows) > policy.table_lead_rows:  # past the lead
            factor[rows[-1]] *= 1.0 + policy.table_tail_weight


def _data_rows(doc: Document) -> list[list[int]]:
    """Per table (a run of table rows), its data rows: those that are not header_row."""
    tables: list[list[int]] = []
    rows: list[int] = []
    for i, unit in enumerate(doc.units):
        if unit.kind is not UnitKind.TABLE_ROW:
            if rows:
                tables.append(rows)
            rows = []
        elif not header_row(doc.text[unit.start : unit.end]):
            rows.append(i)
    if rows:
        tables.append(rows)
    return tables


_CELL_SEP = re.compile(r"[|\t]")
_DIGIT = re.compile(r"\d")


_WORD = re.compile(r"[^\W\d_]{3,}")


def word_row(row: str) -> bool:
    """A row with a word in a cell after its label: names, titles and dates ('Leigh R Fox | 47 | Chief
    Financial Officer', 'Vested | 2,000 | April 30, 2019'), or column titles with a digit ('Current assets |
    As Reported | Topic 606'). On TAT-QA dev they hold 1.3-1.6 gold items per 100 tokens, the rows of
    figures 2.5-2.7 (each half of the documents by id), and a table's first data rows 0.7-1.0 against 4.5-5.2."""
    return any(_WORD.search(cell) for cell in _CELL_SEP.split(row)[1:])


_BLANK = re.compile(r"\s*(?:[$€£¥]?\s*[-–—]*|n/?a|nm)\s*", re.IGNORECASE)


def blank_row(row: str) -> bool:
    """A row with a blank or dash cell after its label ('Unremitted earnings | — | — | 2,127', a
    percentage sub-row 'Percentage of revenue | 12.7% | 12.6% |  | '): it says less than a full row. On
    TAT-QA dev such rows hold 0.6 times the gold per token of the others past a table's second data row
    (each half of the documents by id)."""
    return any(_BLANK.fullmatch(cell) for cell in _CELL_SEP.split(row)[1:])


# an amount, not a year: 1,234 / 12.5 / 336 / 12345 / $(1,234) / 12%
_AMOUNT = re.compile(r"[$€£¥]?\s?\(?[-–]?[$€£¥]?\s?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+|\d{1,3}|\d{5,})\s?\)?%?")


def header_row(row: str) -> bool:
    """A row that names columns or a group rather than holding figures: its first cell is empty and no
    other cell is an amount (' | 2019 | 2018', ' | May 26, 2019 | '), or no other cell holds a digit
    ('Current liabilities |  |'). A row of amounts with no label (' | $12,455 | $18,418') is a table's
    total line, counted as data (it holds TAT-QA's gold as data rows do)."""
    label, *cells = _CELL_SEP.split(row, maxsplit=1)
    if not cells:
        return False
    if not label.strip():
        return not any(_AMOUNT.fullmatch(cell.strip()) for cell in _CELL_SEP.split(cells[0]))
    return not _DIGIT.search(cells[0])
