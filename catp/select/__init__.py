"""Fit the budget: which units to keep, greedy by value per token.

value.py    a unit's worth: facts (rules) + information_weight x information (scorer) + boost; distinct_facts
priors.py   factors on that worth by position: section and document leads, section decay, long spans kept whole
tables.py   the table rows' factors (table_* policy fields) and a table's intro line
ranking.py  value per token: `rank` before any take, `make_density` as the greedy goes (novelty, joins)
novelty.py  `Novelty`: the share of a unit's term weight not covered yet, exact and updated per covered term
budget.py   what kept units cost (runs, gap markers, edges): `estimate`, `Taker`, `fill` in a given order
greedy.py   `select` / `fill_by_value`: the lazy greedy, with units that cannot fit set aside
coverage.py key sections (key_sections): found by heading or label, weighted, covered before the greedy
question.py `question_first`: with a question, the relevant units and their context first, then the greedy
"""

from catp.select.budget import (
           Selection,
           drop_bare_runs,
           estimate,
           fill,
           first_run_change,
           run_heads,
           runs,
)
from catp.select.greedy import fill_by_value, select
from catp.select.priors import long_span_factor, section_lead, sections
from catp.select.question import question_first
from catp.select.ranking import rank
from catp.select.value import DEFAULT_POLICY, FACT_CATEGORIES, distinct_facts

__all__ = ["DEFAULT_POLICY", "FACT_CATEGORIES", "Selection", "distinct_facts", "drop_bare_runs", "estimate", "fill",
           "fill_by_value", "first_run_change", "long_span_factor", "question_first", "rank", "run_heads", "runs",
           "section_lead", "sections", "select"]
