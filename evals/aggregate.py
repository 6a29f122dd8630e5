"""Fold per-document scores into per set / method / budget numbers (micro averages:
every gold item, value and question counts once)."""

from __future__ import annotations

from collections import defaultdict

from evals.metrics import latency_summary, share


def method_order(results, config) -> list[str]:
    seen = {m for r in results.values() for m, _ in r.scores}
    ordered = [name for name, _ in config.catp_variants] + list(config.baselines)
    return [m for m in ordered if m in seen]


def aggregate(sets, results, config) -> dict:
    labels = [b.label for b in config.budgets]
    methods = method_order(results, config)
    out = {}
    for data in sets:
        doc_results = [results[(data.name, i)] for i in range(len(data.docs)) if (data.name, i) in results]
        per_method: dict = {}
        for method in methods:
            per_budget = {}
            for label in labels:
                rows = [(data.docs[r.index], r) for r in doc_results if (method, label) in r.scores]
                if rows:
                    per_budget[label] = _fold(rows, method, label, per_doc=data.kind == "checklist")
            per_method[method] = per_budget
        out[data.name] = {
            "path": data.path, "docs": len(doc_results),
            "gold": sum(len(data.docs[r.index].gold) for r in doc_results),
            "questions": sum(1 for r in doc_results for q in data.docs[r.index].questions if q.gold_index),
            "warnings": data.warnings, "methods": per_method, "kind": data.kind,
        }
    return out


def _fold(rows, method: str, label: str, per_doc: bool = False) -> dict:
    kind = defaultdict(lambda: [0, 0])
    lab = defaultdict(lambda: [0, 0])
    values = defaultdict(lambda: [0, 0])
    q_plain, q_aware = [0, 0], [0, 0]
    in_tok = out_tok = in_ch = out_ch = over = 0
    seconds = []
    docs = {}
    doc_counts: list[tuple[int, int]] = []  # (gold kept, gold) of each document with gold
    for doc, r in rows:
        s = r.scores[(method, label)]
        docs[doc.id] = {"kept": sum(s.gold), "n": len(s.gold)}
        if s.gold:
            doc_counts.append((sum(s.gold), len(s.gold)))
        for g, k in zip(doc.gold, s.gold):
            for bucket in (kind["all"], kind[g.kind], lab[(g.kind, g.label)]):
                bucket[0] += k
                bucket[1] += 1
        for t, k in zip(r.value_types, s.values):
            for bucket in (values["all"], values[t]):
                bucket[0] += k
                bucket[1] += 1
        q_plain[0] += sum(s.questions)
        q_plain[1] += len(s.questions)
        if s.questions_aware is not None:
            q_aware[0] += sum(s.questions_aware)
            q_aware[1] += len(s.questions_aware)
        in_tok += s.in_tokens
        out_tok += s.out_tokens
        in_ch += s.in_chars
        out_ch += s.out_chars
        over += s.over_budget
        seconds.append(s.seconds)
    return {
        "kept": {k: share(*v) for k, v in sorted(kind.items())},
        "counts": {k: v[1] for k, v in sorted(kind.items())},
        "labels": [{"kind": k, "label": l, "n": v[1], "kept": share(*v)} for (k, l), v in sorted(lab.items())],
        "values": {k: share(*v) for k, v in sorted(values.items())},
        "value_counts": {k: v[1] for k, v in sorted(values.items())},
        "questions": share(*q_plain), "questions_n": q_plain[1],
        "questions_aware": share(*q_aware) if q_aware[1] else None,
        "size_tokens": out_tok / in_tok if in_tok else None,
        "size_chars": out_ch / in_ch if in_ch else None,
        "over_budget_docs": over,
        "latency": latency_summary(seconds, in_tok),
        "docs": len(rows),
        **({"per_doc": docs} if per_doc else {}),
        "kept_ci95": bootstrap_ci(doc_counts),
        "per_doc_spread": spread([k / n for k, n in doc_counts]),
    }


BOOTSTRAP_ROUNDS = 2000
BOOTSTRAP_SEED = 25


def bootstrap_ci(per_doc: list[tuple[int, int]], rounds: int = BOOTSTRAP_ROUNDS) -> list[float] | None:
    """95 % confidence interval of the share of gold kept (a micro average), by resampling documents with
    replacement (percentile bootstrap, fixed seed: the same data gives the same interval)."""
    if len(per_doc) < 2:
        return None
    import random

    rng = random.Random(BOOTSTRAP_SEED)
    n = len(per_doc)
    shares = []
    for _ in range(rounds):
        sample = [per_doc[rng.randrange(n)] for _ in range(n)]
        gold = sum(g for _, g in sample)
        shares.append(sum(k for k, _ in sample) / gold)
    shares.sort()
    return [shares[int(0.025 * (rounds - 1))], shares[int(0.975 * (rounds - 1))]]


def spread(values: list[float]) -> dict | None:
    """The spread of per-document shares: min, 10th, 50th and 90th percentile, max (nearest rank)."""
    if not values:
        return None
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"min": ordered[0], "p10": at(0.1), "p50": at(0.5), "p90": at(0.9), "max": ordered[-1]}


def compare(aggregated: dict, a: str, b: str) -> dict:
    """Per set, budget and label: share kept by rule set A, by B, and A - B."""
    out = {}
    for set_name, data in aggregated.items():
        ma, mb = data["methods"].get(a, {}), data["methods"].get(b, {})
        per_budget = {}
        for label in ma:
            if label not in mb:
                continue
            lb = {(x["kind"], x["label"]): x for x in mb[label]["labels"]}
            rows = []
            for kind in ma[label]["kept"]:
                rows.append(_delta(kind, "(all)" if kind == "all" else "(kind)", ma[label]["counts"][kind],
                                   ma[label]["kept"][kind], mb[label]["kept"].get(kind)))
            for x in ma[label]["labels"]:
                other = lb.get((x["kind"], x["label"]))
                rows.append(_delta(x["kind"], x["label"], x["n"], x["kept"], other["kept"] if other else None))
            per_budget[label] = rows
        out[set_name] = per_budget
    return out


def _delta(kind, label, n, a, b) -> dict:
    return {"kind": kind, "label": label, "n": n, "a": a, "b": b,
            "delta": None if a is None or b is None else a - b}
