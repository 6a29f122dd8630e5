"""Taking units under the budget: what kept units cost (their tokens, a gap marker per run less what
a run's first unit does not spend) and `Taker`, which keeps a unit (with its group) only when it fits."""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from catp.document import Document

# what says something: a letter or digit of any script, or an emoji (an emoji-only text is content)
_CONTENT_CHAR = regex.compile(r"[\p{L}\p{N}\p{Extended_Pictographic}\p{Regional_Indicator}]")


@dataclass
class Selection:
    """Per unit, whether it is kept; the units in the order they were taken (the pipeline's exact count
    drops the last first); the output's tokens as Taker estimates them."""

    kept: list[bool]
    added: list[int] = field(default_factory=list)  # unit indices in the order they were taken
    estimated_tokens: int = 0


def run_heads(doc: Document, gap_tokens: int) -> list[int]:
    """Per unit, what starting a run of kept units there costs beyond its tokens, when a gap marker comes
    before it: the marker, less the whitespace tokens before the unit that the run does not hold
    (`Unit.edge`) and the marker's last token when it merges into the unit's first. The run that opens
    the output has no marker before it: it costs `first_run_change` more than that."""
    return [gap_tokens - u.edge - u.marker_merge for u in doc.units]


def first_run_change(doc: Document, gap_tokens: int, first: int) -> int:
    """What the output's first run, starting at unit `first`, costs on top of run_heads: no marker comes
    before it, and none merges into it."""
    return doc.units[first].marker_merge - gap_tokens


def estimate(doc: Document, kept: list[bool], gap_tokens: int) -> int:
    """The estimated tokens of the output that `kept` gives, counted from scratch (Taker counts it as it
    goes): the units' tokens, and for each run a gap marker before it less the tokens its first unit does
    not spend (run_heads), with no marker before the first run."""
    found = runs(kept)
    if not found:
        return 0
    heads = run_heads(doc, gap_tokens)
    return (sum(u.tokens for u, k in zip(doc.units, kept) if k) + sum(heads[a] for a, _ in found)
            + first_run_change(doc, gap_tokens, found[0][0]))


def drop_bare_runs(doc: Document, kept: list[bool]) -> int:
    """Un-keep each run of kept units that holds no letter, digit or emoji: a lone '(' or ',' left between
    deleted or unkept text costs a gap marker and says nothing. Returns how many units were dropped."""
    dropped = 0
    text, units = doc.text, doc.units
    for first, last in runs(kept):
        if not _CONTENT_CHAR.search(text, units[first].start, units[last].end):
            for i in range(first, last + 1):
                kept[i] = False
            dropped += last - first + 1
    return dropped


def runs(kept: list[bool]) -> list[tuple[int, int]]:
    """Maximal runs [first, last] of consecutive kept units."""
    out: list[tuple[int, int]] = []
    start = None
    for i, k in enumerate(kept):
        if k and start is None:
            start = i
        elif not k and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(kept) - 1))
    return out


class Taker:
    """Adds units (with their groups) to a selection while they fit the budget."""

    def __init__(self, doc: Document, budget: int, gap_tokens: int, selection: Selection) -> None:
        self.doc, self.budget, self.gap, self.sel = doc, budget, gap_tokens, selection
        self.group = doc.columns.group or [-1] * len(doc.units)  # per unit, its group (kept together), -1: none
        self.members: dict[int, list[int]] = {}
        for i, g in enumerate(self.group):
            if g != -1 and not doc.columns.deleted[i]:
                self.members.setdefault(g, []).append(i)
        units = doc.units
        unfit = [g for g, ms in self.members.items() if sum(units[j].tokens for j in ms) > budget]
        if unfit:  # a span that can never fit whole is taken unit by unit
            self.group = list(self.group)
            for g in unfit:
                for j in self.members.pop(g):
                    self.group[j] = -1
        self.heads = heads = run_heads(doc, gap_tokens)
        self.first = selection.kept.index(True) if any(selection.kept) else None  # the first kept unit
        # The least a single unit can add: its tokens and its run start (or, as the output's first unit, its
        # tokens less its edge; before the first kept unit, with that unit's merge) less what the kept unit
        # after it would no longer cost by starting a run.
        most_merge = max((u.marker_merge for u in doc.units), default=0)
        n = len(heads)
        self.least = [u.tokens + min(0, heads[i], -u.edge, gap_tokens - u.edge - most_merge)
                      - max(heads[i + 1] if i + 1 < n else 0, 0) for i, u in enumerate(doc.units)]

    def cost(self, i: int) -> tuple[int, list[int]] | None:
        """What keeping unit i (and its group) would add to the estimate now, and the units it adds; None when
        it is kept. The units' tokens, and for each run the gap marker before it less what its first unit
        does not spend (run_heads), with no marker before the first run."""
        kept, doc = self.sel.kept, self.doc
        if kept[i]:
            return None
        group = self.group[i]
        n, heads, units = len(kept), self.heads, doc.units
        take = [j for j in self.members[group] if not kept[j]] if group != -1 else [i]
        cost, previous = 0, -2
        for j in take:  # ascending: a member right after another extends its run
            cost += units[j].tokens
            if not (j > 0 and (kept[j - 1] or previous == j - 1)):
                cost += heads[j]  # j starts a run
            if j + 1 < n and kept[j + 1]:
                cost -= heads[j + 1]  # the run after j no longer starts there
            previous = j
        if self.first is None or take[0] < self.first:  # it opens the output
            cost += first_run_change(doc, self.gap, take[0])
            if self.first is not None:
                cost -= first_run_change(doc, self.gap, self.first)
        return cost, take

    def surely_unfit(self, i: int) -> bool:
        """Unit i cannot fit, whatever it joins: even its least cost is over the budget left (not bounded
        for a unit in a group, whose cost is its group's)."""
        return self.group[i] == -1 and self.sel.estimated_tokens + self.least[i] > self.budget

    def take(self, i: int) -> list[int]:
        """Keep unit i (and its group) if it fits; the units added."""
        if self.surely_unfit(i):
            return []
        return self._keep(self.cost(i))

    def _keep(self, found: tuple[int, list[int]] | None) -> list[int]:
        """Keep the units of a cost() if they fit; the units added."""
        if found is None or self.sel.estimated_tokens + found[0] > self.budget:
            return []
        cost, take = found
        for j in take:
            self.sel.kept[j] = True
        self.sel.estimated_tokens += cost
        self.sel.added.extend(take)
        self.first = take[0] if self.first is None else min(self.first, take[0])
        return take


def fill(doc: Document, order: list[int], budget: int, gap_tokens: int, selection: Selection) -> None:
    """Take units in `order` while they fit. A unit in a group (a clause or sentence a rule
    asked to keep whole) comes with its group."""
    taker = Taker(doc, budget, gap_tokens, selection)
    for i in order:
        taker.take(i)
