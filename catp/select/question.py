"""With a question (Pruner's question_share): the units most relevant to it take their share of the budget
first, with their context, before the greedy fills the rest."""

from __future__ import annotations

from catp.document import Document
from catp.select.policy import SelectionPolicy
from catp.select.budget import Selection, fill
from catp.select.greedy import fill_by_value
from catp.select.priors import sections

SHORT_PARAGRAPH_TOKENS = 250  # with a question, a relevant paragraph this short is kept whole


def paragraphs(doc: Document) -> list[list[int]]:
    """For each unit, the units of its paragraph (a line of text)."""
    out: list[list[int]] = []
    current: list[int] = []
    for i, unit in enumerate(doc.units):
        if current and "\n" in doc.text[doc.units[i - 1].end : unit.start]:
            current = []
        current.append(i)
        out.append(current)
    return out


def question_first(doc: Document, budget: int, gap_tokens: int, share: float,
                   policy: SelectionPolicy) -> Selection:
    """With a question: the most question-relevant units take up to `share` of the budget first.
    The section holding the most relevant unit comes first, whole, when it fits that share
    (a table's caption and notes, a case's facts); then each relevant unit with its context."""
    selection = Selection([False] * len(doc.units))
    n = len(doc.units)
    deleted = doc.columns.deleted
    by_relevance = sorted((i for i in range(n) if not deleted[i] and doc.scores.get(i, 0.0) > 0),
                          key=lambda i: (-doc.scores.get(i, 0.0), i))
    lines = paragraphs(doc)
    with_context: list[int] = []
    if by_relevance:
        first, end = next(b for b in sections(doc) if b[0] <= by_relevance[0] < b[1])
        # the section as one run, which does not hold the whitespace before its first unit (Unit.edge)
        if sum(doc.units[j].tokens for j in range(first, end)) - doc.units[first].edge <= budget * share:
            with_context.extend(range(first, end))
    for i in by_relevance:  # answers sit beside the match: its whole paragraph when short, else neighbours
        members = lines[i]
        if sum(doc.units[j].tokens for j in members) <= SHORT_PARAGRAPH_TOKENS:
            with_context.extend(members)
        with_context.extend(j for j in (i, i + 1, i - 1) if 0 <= j < n)
    with_context = [j for j in with_context if not deleted[j]]
    fill(doc, with_context, int(budget * share), gap_tokens, selection)
    fill_by_value(doc, budget, gap_tokens, selection, policy)
    return selection
