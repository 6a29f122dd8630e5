"""How many checklist facts an extract can keep at all, per unit granularity: a greedy oracle that knows the
facts (evals/checklists) keeps whole units, in Qwen tokens counted as catp counts its output (gap markers
included), at each ratio. It bounds what any ranking over those units can reach.

    python -m evals.unit_oracle [--ratios 1/10,1/6,1/4] [--data evals/checklists] [--markdown]

Granularities:
- catp-atoms: what catp's selection keeps or drops as one piece today: its units, with the units of a span a
  rule keeps whole (expand: sentence/clause, the group column) joined into one;
- sentences: catp's units joined by sentence;
- catp-units: catp's units (segment splits at clause ends, annotate cuts around boilerplate), groups ignored;
- clauses: catp's units as the pruner builds them with `clause_units` on (catp.segment.clauses): cut also at
  every clause mark, enumeration and list separator, with no minimum length;
- window-N: fixed windows of N tokens;
- quotes (bound): no units at all, only the facts' own quotes (`quote_bound`): no extract with gap markers keeps
  more; `quotes at 90 %` lets each quote lose the 10 % the keep rule allows.

The oracle: while something fits, take the move (the units a still-lost fact needs) that keeps the most facts
per token; a fact is kept as evals scores it (90% of its non-space characters inside kept units).
"""

from __future__ import annotations

import argparse
import math
import sys
from bisect import bisect_left, bisect_right
from fractions import Fraction
from pathlib import Path

from evals.loaders.checklist import load_checklists
from evals.metrics import KEEP_SHARE
from evals.sizing import nonws_prefix

GAP = " … "


def _pieces_by(units, key) -> list[tuple[int, int]]:
    """Units joined where key(unit) is the same for neighbours (a group may hold a detached unit: its pieces
    are still one atom, kept together)."""
    out: list[tuple[int, int]] = []
    last = object()
    for u in units:
        k = key(u)
        if out and k is not None and k == last:
            out[-1] = (out[-1][0], u.end)
        else:
            out.append((u.start, u.end))
        last = k
    return out


def granularities(pruner, doc, windows: list[int]) -> dict[str, list[tuple[int, int]]]:
    """name -> the document's atoms as (start, end), in order, boilerplate units left out."""
    from catp.segment import clauses
    from catp.segment.splitter import strip_span

    analysed = pruner.analyse(doc.text, ratio=0.5, domain=doc.domain)
    units, cols = analysed.units, analysed.columns
    live = [u for u in units if not cols.deleted[u.index]]
    group = cols.group
    out = {
        "catp-atoms": _pieces_by(live, lambda u: group[u.index] if group[u.index] != -1 else None),
        "sentences": _pieces_by(live, lambda u: u.sentence),
        "catp-units": [(u.start, u.end) for u in live],
    }
    fine = clauses.split_units(analysed)
    out["clauses"] = [(a, b) for a, b, deleted in fine if not deleted]
    starts = analysed.token_starts
    for n in windows:
        cuts = starts[::n] + [len(doc.text)]
        stripped = (strip_span(doc.text, a, b) for a, b in zip(cuts, cuts[1:]))
        out[f"window-{n}"] = [(a, b) for a, b in stripped if a < b]
    return out


def oracle(text: str, atoms: list[tuple[int, int]], facts: list[tuple[int, int]], budget: int, counter,
           token_starts: list[int]) -> tuple[int, int, int]:
    """Greedy: (facts kept, tokens used, tokens spent on gap markers)."""
    prefix = nonws_prefix(text)
    n = len(atoms)
    cost = [counter.count_joined(text, token_starts, [a], GAP) for a in atoms]
    gap = counter.count(GAP)
    a_starts = [a for a, _ in atoms]

    def needs(start: int, end: int) -> list[int]:
        lo = max(bisect_right(a_starts, start) - 1, 0)
        hi = bisect_left(a_starts, end)
        return [i for i in range(lo, hi) if atoms[i][1] > start and atoms[i][0] < end]

    need = [needs(s, e) for s, e in facts]
    kept = [False] * n

    def covered(f: int) -> bool:
        s, e = facts[f]
        total = prefix[e] - prefix[s]
        inside = sum(prefix[min(e, atoms[i][1])] - prefix[max(s, atoms[i][0])] for i in need[f] if kept[i])
        return total == 0 or inside >= KEEP_SHARE * total

    def pieces() -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for i in range(n):
            if kept[i]:
                if out and kept[i - 1]:
                    out[-1] = (out[-1][0], atoms[i][1])
                else:
                    out.append(atoms[i])
        return out

    def extra(move: list[int]) -> int:
        """Tokens the move adds, roughly: its atoms and a gap marker per new run, less one per run it joins."""
        add = set(i for i in move if not kept[i])
        tokens = sum(cost[i] for i in add)
        for i in sorted(add):
            if not (i > 0 and (kept[i - 1] or (i - 1) in add)):
                tokens += gap
            if i + 1 < n and kept[i + 1]:
                tokens -= gap
        return tokens

    used = 0
    lost = [f for f in range(len(facts)) if not covered(f)]
    while lost:
        best, best_rate = None, 0.0
        for f in lost:
            move = [i for i in need[f] if not kept[i]]
            tokens = max(extra(move), 1)
            if used + tokens > budget:
                continue
            for i in move:
                kept[i] = True
            gain = sum(1 for g in lost if covered(g))
            for i in move:
                kept[i] = False
            if gain / tokens > best_rate:
                best, best_rate = (f, move), gain / tokens
        if best is None:
            break
        f, move = best
        for i in move:
            kept[i] = True
        exact = counter.count_joined(text, token_starts, pieces(), GAP)
        if exact > budget:  # the rough count was short: this fact does not fit
            for i in move:
                kept[i] = False
            lost.remove(f)
            continue
        used = exact
        lost = [g for g in lost if not covered(g)]
    runs = pieces()
    kept_facts = sum(1 for f in range(len(facts)) if covered(f))
    return kept_facts, used, gap * max(len(runs) - 1, 0)


def quote_bound(text: str, facts: list[tuple[int, int]], budget: int, counter, share: float = 1.0) -> int:
    """The most facts any extract with gap markers can keep: only the facts' own quotes (overlapping ones
    merged into one piece), each piece behind a marker but the first, at the least total cost (an exact
    knapsack over the facts kept, not greedy). A piece costs its tokens alone (`share` of them: 0.9 lets
    each quote lose the 10 % the keep rule allows), so joins are counted generously."""
    pieces: list[list[int]] = []  # [start, end, facts]
    for start, end in sorted(facts):
        if pieces and start <= pieces[-1][1]:
            pieces[-1][1] = max(end, pieces[-1][1])
            pieces[-1][2] += 1
        else:
            pieces.append([start, end, 1])
    gap = counter.count(GAP)
    inf = float("inf")
    least = [0.0] + [inf] * len(facts)  # least[k]: fewest tokens (a marker per piece) that keep k facts
    for start, end, n in pieces:
        cost = math.ceil(share * counter.count(text[start:end])) + gap
        for k in range(len(facts), n - 1, -1):
            if least[k - n] + cost < least[k]:
                least[k] = least[k - n] + cost
    return max(k for k, c in enumerate(least) if c - (gap if k else 0) <= budget)


def source_of(set_name: str, doc_id: str) -> str:
    """The dev checklist's documents by their dev set (cuad-0003 -> cuad); other sets by name."""
    return doc_id.split("-")[0] if set_name == "dev" else set_name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.unit_oracle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="evals/checklists")
    parser.add_argument("--ratios", default="1/10,1/6,1/4")
    parser.add_argument("--windows", default="16,32")
    args = parser.parse_args(argv)
    from catp.pipeline import Pruner
    from catp.tokens import load_token_counter

    ratios = [Fraction(r) for r in args.ratios.split(",")]
    windows = [int(w) for w in args.windows.split(",") if w]
    counter = load_token_counter(None)
    pruner = Pruner()
    paths = sorted(Path(args.data).glob("*.jsonl")) if Path(args.data).is_dir() else [Path(args.data)]
    totals: dict[tuple[str, str, Fraction], list[int]] = {}  # (set, granularity, ratio) -> [kept, facts, gap, used]
    names: list[str] = []
    for path in paths:
        for data in load_checklists(path):
            for doc in data.docs:
                starts = counter.token_starts(doc.text)
                facts = [(g.start, g.end) for g in doc.gold]
                for name, atoms in granularities(pruner, doc, windows).items():
                    if name not in names:
                        names.append(name)
                    for r in ratios:
                        budget = int(r * len(starts))
                        kept, used, gap = oracle(doc.text, atoms, facts, budget, counter, starts)
                        row = totals.setdefault((source_of(data.name, doc.id), name, r), [0, 0, 0, 0])
                        row[0] += kept
                        row[1] += len(facts)
                        row[2] += gap
                        row[3] += used
                for name, share in (("quotes (bound)", 1.0), ("quotes at 90 % (bound)", 0.9)):
                    if name not in names:
                        names.append(name)
                    for r in ratios:
                        row = totals.setdefault((source_of(data.name, doc.id), name, r), [0, 0, 0, 0])
                        row[0] += quote_bound(doc.text, facts, int(r * len(starts)), counter, share)
                        row[1] += len(facts)
                print(f"{data.name}/{doc.id}", file=sys.stderr, flush=True)
    sets = sorted({k[0] for k in totals}, key=lambda s: (s in ("examples", "contract_zh_long"), s))
    print("| granularity | ratio | " + " | ".join(sets) + " | dev | all | gap-marker tokens (share of output) |")
    print("|---|---|" + "---|" * (len(sets) + 3))
    for name in names:
        for r in ratios:
            cells, kept_all, facts_all, gap_all, used_all = [], 0, 0, 0, 0
            dev = [totals[s, name, r] for s in sets if s not in ("examples", "contract_zh_long")]
            for s in sets:
                kept, facts, gap, used = totals[s, name, r]
                cells.append(f"{kept / facts:.2f}")
                kept_all, facts_all, gap_all, used_all = kept_all + kept, facts_all + facts, gap_all + gap, used_all + used
            dev_share = sum(d[0] for d in dev) / max(sum(d[1] for d in dev), 1)
            print(f"| {name} | {r} | " + " | ".join(cells) + f" | {dev_share:.2f} | {kept_all / facts_all:.2f} | "
                  + (f"{gap_all} ({gap_all / used_all:.0%}) |" if used_all else "– |"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
