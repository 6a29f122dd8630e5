"""Write the report folder: results.json, report.md, report.html, failures.md, plots/*.png."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

from evals.tables import Table, inline_html, num, pct

FAILURES_PER_SET = 25


def summary_table(aggregated: dict, *, title: str = "Share of gold kept") -> Table:
    columns = ["set", "budget", "method", "gold kept", "questions", "q-aware", "values kept",
               "size (tokens)", "size (chars)", "p50 ms", "p95 ms", "tokens/s"]
    table = Table(title, columns)
    for set_name, data in aggregated.items():
        budgets = _budgets(data)
        for label in budgets:
            for method, per_budget in data["methods"].items():
                m = per_budget.get(label)
                if not m:
                    continue
                lat = m["latency"]
                table.rows.append([
                    set_name, label, method, pct(m["kept"].get("all")),
                    pct(m["questions"]) if m["questions_n"] else "–", pct(m["questions_aware"]),
                    pct(m["values"].get("all")), f"{m['size_tokens']:.3f}", f"{m['size_chars']:.3f}",
                    num(lat.get("p50_ms"), 1), num(lat.get("p95_ms"), 1), num(lat.get("tokens_per_s")),
                ])
    return table


def confidence_table(aggregated: dict) -> Table:
    """Per set, budget and method: the share of gold kept with its bootstrap 95 % interval (documents
    resampled) and the spread of the per-document shares."""
    table = Table("Share of gold kept: 95 % bootstrap interval over documents, and per-document spread",
                  ["set", "budget", "method", "gold kept", "95% CI", "docs", "min", "p10", "p50", "p90", "max"])
    for set_name, data in aggregated.items():
        for label in _budgets(data):
            for method, per_budget in data["methods"].items():
                m = per_budget.get(label)
                if not m:
                    continue
                ci, doc = m.get("kept_ci95"), m.get("per_doc_spread") or {}
                table.rows.append([set_name, label, method, pct(m["kept"].get("all")),
                                   f"{pct(ci[0])}–{pct(ci[1])}" if ci else "–", str(m["docs"]),
                                   *[pct(doc.get(q)) for q in ("min", "p10", "p50", "p90", "max")]])
    return table


def kind_tables(aggregated: dict) -> list[Table]:
    tables = []
    for set_name, data in aggregated.items():
        kinds = sorted({k for pb in data["methods"].values() for m in pb.values() for k in m["kept"]} - {"all"})
        vtypes = sorted({k for pb in data["methods"].values() for m in pb.values() for k in m["values"]} - {"all"})
        table = Table(f"{set_name}: share kept per kind ({data['docs']} docs, {data['gold']} gold items)",
                      ["budget", "method", "all", *kinds, *[f"value:{v}" for v in vtypes], "over budget"])
        for label in _budgets(data):
            for method, per_budget in data["methods"].items():
                m = per_budget.get(label)
                if m:
                    table.rows.append([label, method, pct(m["kept"].get("all")),
                                       *[pct(m["kept"].get(k)) for k in kinds],
                                       *[pct(m["values"].get(v)) for v in vtypes], str(m["over_budget_docs"])])
        tables.append(table)
    return tables


def doc_tables(aggregated: dict) -> list[Table]:
    """Checklist sets: share of facts kept per document, one column per budget and method."""
    tables = []
    for set_name, data in aggregated.items():
        if data.get("kind") != "checklist":
            continue
        columns = [(label, method) for label in _budgets(data) for method in data["methods"]
                   if "per_doc" in data["methods"][method].get(label, {})]
        if not columns:
            continue
        first = data["methods"][columns[0][1]][columns[0][0]]["per_doc"]
        table = Table(f"{set_name}: share of facts kept per document",
                      ["document", "facts", *[f"{method} {label}" for label, method in columns]])
        for doc_id, counts in first.items():
            cells = []
            for label, method in columns:
                c = data["methods"][method][label]["per_doc"].get(doc_id)
                cells.append(pct(c["kept"] / c["n"]) if c and c["n"] else "–")
            table.rows.append([doc_id, str(counts["n"]), *cells])
        tables.append(table)
    return tables


def label_tables(aggregated: dict) -> list[Table]:
    tables = []
    for set_name, data in aggregated.items():
        if data.get("kind") == "checklist":  # no labels: the kind tables say it all
            continue
        methods = list(data["methods"])
        for label in _budgets(data):
            per = {m: {(x["kind"], x["label"]): x for x in data["methods"][m].get(label, {}).get("labels", [])}
                   for m in methods}
            keys = sorted({k for v in per.values() for k in v})
            table = Table(f"{set_name} at {label}: share kept per label", ["kind", "label", "n", *methods])
            for key in keys:
                n = next((per[m][key]["n"] for m in methods if key in per[m]), 0)
                table.rows.append([key[0], key[1], str(n), *[pct(per[m].get(key, {}).get("kept")) for m in methods]])
            tables.append(table)
    return tables


def comparison_tables(comparison: dict, a: str, b: str) -> list[Table]:
    tables = []
    for set_name, per_budget in comparison.items():
        for label, rows in per_budget.items():
            table = Table(f"{set_name} at {label}: {a} vs {b} (delta = {a} - {b})",
                          ["kind", "label", "n", a, b, "delta"])
            for r in rows:
                delta = "–" if r["delta"] is None else f"{r['delta']:+.3f}"
                table.rows.append([r["kind"], r["label"], str(r["n"]), pct(r["a"]), pct(r["b"]), delta])
            tables.append(table)
    return tables


def _budgets(data: dict) -> list[str]:
    seen = []
    for per_budget in data["methods"].values():
        for label in per_budget:
            if label not in seen:
                seen.append(label)
    return seen


# -- failures -------------------------------------------------------------------------------

def pick_failures(failures: list[dict], limit: int | None = FAILURES_PER_SET) -> list[dict]:
    """Evenly spread over the (sorted) list, so every part of a set shows up; all of them when limit is None."""
    ordered = sorted(failures, key=lambda f: (f["method"], f["budget"], f["doc"], f["gold_index"]))
    if limit is None or len(ordered) <= limit:
        return ordered
    step = len(ordered) / limit
    return [ordered[int(i * step)] for i in range(limit)]


def failure_markdown(set_name: str, failures: list[dict], facts: bool = False) -> str:
    """facts: a checklist set, where every lost fact is listed with why it matters."""
    lines = [f"## {set_name}: {'every lost fact' if facts else 'lost gold items'}", ""]
    if not failures:
        return "\n".join(lines + ["None lost.", ""])
    for f in failures:
        rel_s, rel_e = f["start"] - f["context_start"], f["end"] - f["context_start"]
        ctx = f["context"]
        shown = (ctx[:rel_s] + "⟦" + ctx[rel_s:rel_e] + "⟧" + ctx[rel_e:]).replace("\n", " ⏎ ")
        if facts:
            lines += [f"### {f['doc']} · fact #{f['gold_index']} · {f['kind']}: {f.get('why', '')} · {f['method']} at {f['budget']}",
                      "", f"> {shown}", ""]
        else:
            lines += [f"### {f['doc']} · gold #{f['gold_index']} · {f['kind']} / {f['label']} · {f['method']} at {f['budget']}",
                      "", f"> {shown}", ""]
        if not f["units"]:
            lines += ["(no per-unit decisions available)", ""]
            continue
        lines += ["| unit | kept | why | priority | score |", "|---|---|---|---|---|"]
        for u in f["units"]:
            text = ctx[max(u["start"] - f["context_start"], 0): u["end"] - f["context_start"]]
            text = (text[:70] + "…" if len(text) > 70 else text).replace("\n", " ").replace("|", "\\|")
            mark = "**" if u["overlaps_gold"] else ""
            why = _why(u)
            lines.append(f"| {mark}{text}{mark} | {'yes' if u['kept'] else 'no'} | {why} | {u['priority']} | {u['score']} |")
        lines.append("")
    return "\n".join(lines)


def _why(unit: dict) -> str:
    rules = ", ".join(unit["reasons"])
    if unit["deleted"]:
        return f"deleted as boilerplate ({rules})" if rules else "deleted as boilerplate"
    if unit["kept"]:
        return rules or "score"
    if rules:
        return f"protected ({rules}) but forced out by the budget"
    return "outranked: score below the cut"


# -- plots ----------------------------------------------------------------------------------

def plot_sets(aggregated: dict, out_dir: Path, budgets: list, unit: str = "tokens",
              skipped: dict[str, str] | None = None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [b.ratio if b.ratio is not None else b.absolute for b in budgets]
    x_label = (f"ratio (output / input, in {unit})" if budgets[0].ratio is not None else f"budget ({unit})")
    paths = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for set_name, data in aggregated.items():
        kinds = ["all", *sorted({k for pb in data["methods"].values() for m in pb.values() for k in m["kept"]} - {"all"})]
        cols = min(len(kinds), 3)
        rows = math.ceil(len(kinds) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
        for ax, kind in zip(axes.flat, kinds):
            for method, per_budget in data["methods"].items():
                points = [(x, per_budget[b.label]["kept"].get(kind)) for x, b in zip(xs, budgets) if b.label in per_budget]
                points = [(x, y) for x, y in points if y is not None]
                if points:
                    style = "-o" if method.startswith("catp") else "--s"
                    ax.plot(*zip(*points), style, label=method, linewidth=2 if method.startswith("catp") else 1.2)
            counts = next((m["counts"] for pb in data["methods"].values() for m in pb.values()), {})
            ax.set_title(f"{set_name}: {kind} (n={counts.get(kind, 0):,})")
            ax.set_xlabel(x_label)
            ax.set_xticks(xs, [b.label for b in budgets])
            ax.set_xlim(0, max(xs) * 1.08)
            ax.set_ylabel("share of gold kept")
            ax.set_ylim(0, 1.02)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(kinds):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=8, loc="best")
        footer = (0.1 + 0.16 * len(skipped)) / (3.6 * rows) if skipped else 0
        fig.tight_layout(rect=(0, footer, 1, 1))
        if skipped:  # say which baselines are missing, and why, on the figure itself
            fig.text(0.01, 0.01, "\n".join(skipped.values()), fontsize=8, color="dimgray")
        path = out_dir / f"{_safe(set_name)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


# -- writing the folder ---------------------------------------------------------------------

def write_report(out: Path, payload: dict, tables: list[Table], failures_md: str, plots: list[Path]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(_clean(payload), indent=1, ensure_ascii=False))
    header = _header_lines(payload)
    md = ["# catp eval report", "", *header, ""]
    for t in tables:
        md += [f"### {t.title}", "", t.to_markdown(), ""]
    md += ["## Plots", ""] + [f"![{p.stem}](plots/{p.name})" for p in plots] + ["", "## Failures", "",
                                                                                "See [failures.md](failures.md).", ""]
    (out / "report.md").write_text("\n".join(md))
    (out / "failures.md").write_text(failures_md)
    body = "".join(f"<p>{inline_html(line.lstrip('- '))}</p>" for line in header if line)
    body += "".join(t.to_html() for t in tables)
    body += "".join(f'<h3>{html.escape(p.stem)}</h3><img src="plots/{p.name}" alt="{html.escape(p.stem)}">' for p in plots)
    body += '<p><a href="failures.md">failures.md</a>: lost gold items and the decisions around them</p>'
    (out / "report.html").write_text(HTML.format(body=body))


def write_items(path: Path, sets, results: dict) -> int:
    """One JSON line per gold item, method and budget: where the item is and whether it was kept (the
    per-item view behind the shares; `--items`). Returns the number of lines."""
    lines = []
    for s in sets:
        for index, doc in enumerate(s.docs):
            result = results.get((s.name, index))
            if result is None:
                continue
            for (method, budget), score in sorted(result.scores.items()):
                for i, (g, kept) in enumerate(zip(doc.gold, score.gold)):
                    lines.append(json.dumps({"set": s.name, "doc": doc.id, "method": method, "budget": budget,
                                             "gold_index": i, "kind": g.kind, "label": g.label, "start": g.start,
                                             "end": g.end, "kept": kept}, ensure_ascii=False))
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return len(lines)


def _header_lines(payload: dict) -> list[str]:
    cfg = payload["config"]
    lines = [f"- command: `{cfg['command']}`", f"- size measure: {cfg['size']}; tokenizer: {cfg['tokenizer']}",
             f"- scorer: {cfg['scorer']}; domain: {cfg['domain'] or 'from each document'}; rules: {cfg['rules'] or 'built-in'}",
             f"- value check: {payload['extractors']}", f"- wall time: {payload['wall_s']:.1f} s with {cfg['jobs']} workers"]
    lines += [f"- {reason}" for reason in payload["skipped"].values()]
    return lines


def _clean(value):
    """JSON has no NaN or infinity: write null."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


HTML = """<!doctype html><html><head><meta charset="utf-8"><title>catp eval report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}}table{{border-collapse:collapse;margin:.5em 0 1.5em}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}td:nth-child(-n+3),th:nth-child(-n+3){{text-align:left}}
img{{max-width:100%}}</style></head><body><h1>catp eval report</h1>{body}</body></html>
"""
