"""`--rule-report`: how much gold the text each rule touches holds, kept and not kept.

For a rule author this is the measure behind a priority: a rule whose touched text holds more gold per
1,000 tokens than the text the budget keeps deserves a higher priority (its unkept text is worth taking), and
one whose text holds less is bringing in noise. Gold is shared among the units it overlaps by characters, so
each item counts once in all.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import defaultdict
from pathlib import Path

from evals.tables import Table

# Per rule: units, tokens, gold, then the same for the kept units (the not-kept are the difference).
FIELDS = ("units", "tokens", "gold", "kept_units", "kept_tokens", "kept_gold")
ALL_UNITS = "(all units)"
NO_RULE = "(no rule)"


def unit_gold(units, gold) -> list[float]:
    """Per unit (sorted, not overlapping), its share of the gold items: an item split over two units
    counts by the characters of it each holds."""
    starts = [u.start for u in units]
    shares = [0.0] * len(units)
    for g in gold:
        length = g.end - g.start
        if length <= 0:
            continue
        i = max(bisect_left(starts, g.start) - 1, 0)
        while i < len(units) and units[i].start < g.end:
            overlap = min(units[i].end, g.end) - max(units[i].start, g.start)
            if overlap > 0:
                shares[i] += overlap / length
            i += 1
    return shares


def doc_rule_stats(units, gold) -> dict[str, list[float]]:
    """Per rule id (and the totals under ALL_UNITS, units no rule touched under NO_RULE): FIELDS."""
    shares = unit_gold(units, gold)
    stats: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(FIELDS))
    for unit, share in zip(units, shares):
        if unit.deleted:
            continue
        for rule in (ALL_UNITS, *(unit.rules or (NO_RULE,))):
            row = stats[rule]
            row[0] += 1
            row[1] += unit.tokens
            row[2] += share
            if unit.kept:
                row[3] += 1
                row[4] += unit.tokens
                row[5] += share
    return dict(stats)


def merge(into: dict[str, list[float]], stats: dict[str, list[float]]) -> None:
    for rule, row in stats.items():
        total = into.setdefault(rule, [0.0] * len(FIELDS))
        for k, v in enumerate(row):
            total[k] += v


def aggregate(sets, results) -> dict:
    """{set: {method: {budget: {rule: FIELDS}}}} summed over each set's documents."""
    out: dict = {}
    for s in sets:
        per_set: dict = {}
        for index in range(len(s.docs)):
            result = results.get((s.name, index))
            if result is None:
                continue
            for (method, budget), stats in result.rule_stats.items():
                merge(per_set.setdefault(method, {}).setdefault(budget, {}), stats)
        if per_set:
            out[s.name] = per_set
    return out


def _per_k(gold: float, tokens: float) -> float | None:
    return 1000 * gold / tokens if tokens else None


def rows(stats: dict[str, list[float]]) -> list[dict]:
    """One dict per rule, the totals first, then by tokens touched."""
    out = []
    for rule, (units, tokens, gold, k_units, k_tokens, k_gold) in stats.items():
        out.append({"rule": rule, "units": int(units), "tokens": int(tokens), "gold": round(gold, 2),
                    "kept_tokens_share": round(k_tokens / tokens, 4) if tokens else None,
                    "gold_per_1k": _round(_per_k(gold, tokens)),
                    "kept_gold_per_1k": _round(_per_k(k_gold, k_tokens)),
                    "unkept_gold_per_1k": _round(_per_k(gold - k_gold, tokens - k_tokens)),
                    "unkept_gold": round(gold - k_gold, 2)})
    out.sort(key=lambda r: (r["rule"] != ALL_UNITS, -r["tokens"], r["rule"]))
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def tables(report: dict) -> list[Table]:
    out = []
    for set_name, methods in report.items():
        for method, budgets in methods.items():
            for budget, stats in budgets.items():
                table = Table(f"{set_name}, {method} at {budget}: gold per 1,000 tokens of the text each rule touches",
                              ["rule", "units", "tokens", "kept (tokens)", "gold", "gold/1k", "kept gold/1k",
                               "unkept gold/1k", "unkept gold"])
                for r in rows(stats):
                    table.rows.append([r["rule"], str(r["units"]), str(r["tokens"]), _pct(r["kept_tokens_share"]),
                                       f"{r['gold']:.1f}", _num(r["gold_per_1k"]), _num(r["kept_gold_per_1k"]),
                                       _num(r["unkept_gold_per_1k"]), f"{r['unkept_gold']:.1f}"])
                out.append(table)
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def write(out_dir: Path, report: dict) -> list[Path]:
    """rules.json (every figure) and rules.md (a table per set, method and budget)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {s: {m: {b: rows(st) for b, st in bs.items()} for m, bs in ms.items()} for s, ms in report.items()}
    json_path, md_path = out_dir / "rules.json", out_dir / "rules.md"
    json_path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    intro = ("# Gold per rule\n\nFor each rule, the units it touches (protects or boosts), their tokens "
             "and the gold items they hold (an item over several units is shared by characters). `kept gold/1k` "
             "against `unkept gold/1k`: a rule whose unkept text holds more gold per token than the "
             f"`{ALL_UNITS}` row's kept text is worth a higher priority; one far below it brings in noise. "
             f"Deleted (boilerplate) units are left out; `{NO_RULE}` is the text no rule touches.\n")
    md_path.write_text(intro + "".join(f"\n### {t.title}\n\n{t.to_markdown()}\n" for t in tables(report)),
                       encoding="utf-8")
    return [json_path, md_path]
