"""Fold run2.sh's one-document reports into one table per set (micro averages, as evals/aggregate.py does).

    python docs/journal/2026-12-02-lingua-cpu/merge.py /work/notes/lingua-runs/per-doc

A document's report gives shares and their counts; this sums kept and total over documents, and reads a
document's input tokens back from its latency (tokens per second times seconds).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from evals.aggregate import bootstrap_ci


def main(folder: Path) -> None:
    groups: dict[str, list[dict]] = defaultdict(list)
    for results in sorted(folder.glob("*/results.json")):
        set_name = re.sub(r"\.\d+$", "", results.parent.name)
        groups[set_name].append(json.loads(results.read_text()))
    for set_name, reports in groups.items():
        totals: dict[str, dict] = defaultdict(lambda: defaultdict(float))
        per_doc: dict[str, list] = defaultdict(list)
        for report in reports:
            (data,) = report["sets"].values()
            for method, budgets in data["methods"].items():
                m = budgets["1/6"]
                t = totals[method]
                n = m["counts"].get("all", 0)
                kept = round(m["kept"].get("all", 0) * n)
                t["kept"] += kept
                t["gold"] += n
                if n:
                    per_doc[method].append((kept, n))
                qn = m["questions_n"]
                t["q_n"] += qn
                t["q"] += round((m["questions"] or 0) * qn)
                t["qa"] += round((m["questions_aware"] or 0) * qn)
                lat = m["latency"]
                in_tok = lat["tokens_per_s"] * lat["p50_ms"] / 1000
                t["in_tok"] += in_tok
                t["out_tok"] += (m["size_tokens"] or 0) * in_tok
                t["seconds"] += lat["p50_ms"] / 1000
                t["docs"] += 1
        print(f"\n{set_name}: {len(reports)} documents, {int(totals['catp']['gold'])} gold items, "
              f"{int(totals['catp']['q_n'])} answerable questions")
        print("| method | gold kept | 95 % CI | questions (plain) | questions (question-aware) | out/in tokens | s |")
        print("|---|---|---|---|---|---|---|")
        for method, t in totals.items():
            ci = bootstrap_ci(per_doc[method])
            share = lambda a, b: f"{a / b:.2f}" if b else "–"
            print(f"| {method} | {share(t['kept'], t['gold'])} | "
                  f"{f'{ci[0]:.2f}–{ci[1]:.2f}' if ci else '–'} | {share(t['q'], t['q_n'])} | "
                  f"{share(t['qa'], t['q_n'])} | {t['out_tok'] / t['in_tok']:.3f} | {t['seconds']:,.0f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
