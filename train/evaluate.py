"""Measure a keep-model on key-fact checklists, by source, as docs/keep-model.md reports it.

    python -m train.evaluate --model catp/models/keep                       # in-source, dev + examples
    python -m train.evaluate --loco                                         # leave one corpus out (trains 4 models)
    python -m train.evaluate --model lexical                                # today's ranking, for comparison

Each run is `python -m evals` on the checklists (scorer keep with --scorer-model, or lexical) with the head
baseline, at 1/10, 1/6 and 1/4 of the tokens; the per-document counts are summed by source (the document id's
prefix). --loco trains a model without each training corpus that an eval source has (cail2019, ccks,
e3c, tatqa) and scores that source's documents with it; cuad is never trained on, so its figure is the same.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RATIOS = ("1/10", "1/6", "1/4")
# eval source (document id prefix) -> the training corpus it shares documents' origin with (train.keep_model)
SOURCES = {"cuad": None, "tatqa": "tatqa", "e3c": "e3c", "ccks2017": "ccks", "cail2019": "cail2019"}


def source_of(doc_id: str) -> str:
    for source in SOURCES:
        if doc_id.startswith(source):
            return source
    return doc_id  # the examples' checklists: one document each


def run_evals(checklist: Path, model: str, out: Path, ratios=RATIOS, jobs: int = 2) -> dict:
    scorer = ["--scorer", "lexical"] if model == "lexical" else ["--scorer", "keep", "--scorer-model", model]
    command = [sys.executable, "-m", "evals", "--data", str(checklist), "--ratios", ",".join(ratios), *scorer,
               "--baselines", "head", "--no-values", "--jobs", str(jobs), "--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def by_source(results: dict, only: set[str] | None = None) -> dict:
    """{method: {ratio: {source: (kept, n)}}} from results.json's per-document counts."""
    table: dict = {}
    for data in results["sets"].values():
        for method, per_ratio in data["methods"].items():
            for ratio, found in per_ratio.items():
                for doc, counts in found["per_doc"].items():
                    source = source_of(doc)
                    if only is not None and source not in only:
                        continue
                    cell = table.setdefault(method, {}).setdefault(ratio, {}).setdefault(source, [0, 0])
                    cell[0] += counts["kept"]
                    cell[1] += counts["n"]
    return table


def unit_auc(checklist: Path, model: str) -> dict[str, dict[str, float]]:
    """Per source: the unit AUC of the keep-model's probabilities and of the lexical scores, against units
    labelled from the checklist's facts as the training labels are (train.keep_model.unit_targets)."""
    import numpy as np

    from catp.pipeline import Pruner
    from catp.scoring.keep import KeepModel
    from evals.loaders.checklist import load_checklists
    from train.keep_model import auc, unit_targets

    keep, pruners, pooled = KeepModel.load(model), {}, {}
    for data in load_checklists(checklist):
        for doc in data.docs:
            pruner = pruners.setdefault(doc.domain, Pruner(domain=doc.domain))
            analysed = pruner.analyse(doc.text, budget=1)  # a budget under the text: every unit is scored
            y, _ = unit_targets(doc.text, [(g.start, g.end, 1) for g in doc.gold], analysed)
            lexical = [analysed.scores.get(i, 0.0) for i in range(len(y))]
            cell = pooled.setdefault(source_of(doc.id), ([], [], []))
            cell[0].append(y)
            cell[1].append(keep.probabilities(analysed))
            cell[2].append(np.array(lexical))
    return {source: {"keep": auc(np.concatenate(y), np.concatenate(k)),
                     "lexical": auc(np.concatenate(y), np.concatenate(lex))}
            for source, (y, k, lex) in pooled.items()}


def merge(into: dict, more: dict) -> dict:
    for method, per_ratio in more.items():
        for ratio, per_source in per_ratio.items():
            into.setdefault(method, {}).setdefault(ratio, {}).update(per_source)
    return into


def print_table(title: str, table: dict) -> None:
    print(f"\n{title}")
    for method, per_ratio in table.items():
        for ratio, per_source in per_ratio.items():
            kept = sum(k for k, _ in per_source.values())
            n = sum(n for _, n in per_source.values())
            cells = "  ".join(f"{s} {k / n:.2f}" for s, (k, n) in sorted(per_source.items()))
            print(f"  {method:6} {ratio:5} all {kept / max(n, 1):.3f}  ({cells})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "catp/models/keep"), help="a model folder, or 'lexical'")
    parser.add_argument("--loco", action="store_true", help="leave one corpus out: train and score per source")
    parser.add_argument("--checklists", nargs="*", type=Path,
                        default=[ROOT / "evals/checklists/dev.jsonl", ROOT / "evals/checklists/examples.jsonl"])
    parser.add_argument("--json", type=Path, help="also write the tables here")
    parser.add_argument("--auc", action="store_true", help="unit AUC by source instead (keep-model and lexical)")
    args = parser.parse_args(argv)
    if args.auc:
        for checklist in args.checklists:
            for source, found in unit_auc(checklist, args.model).items():
                print(f"{checklist.name} {source}: keep {found['keep']:.3f}  lexical {found['lexical']:.3f}")
        return 0
    tables = {}
    with tempfile.TemporaryDirectory() as scratch:
        for checklist in args.checklists:
            if not args.loco:
                tables[checklist.name] = by_source(run_evals(checklist, args.model, Path(scratch) / checklist.stem))
                continue
            table: dict = {}
            for source, corpus in SOURCES.items():
                model = args.model
                if corpus is not None:
                    model = str(Path(scratch) / f"model-{corpus}")
                    if not Path(model).exists():
                        from train.keep_model import main as train_main

                        train_main(["--out", model, "--exclude", corpus])
                merge(table, by_source(run_evals(checklist, model, Path(scratch) / f"{checklist.stem}-{source}"),
                                       only={source}))
            tables[checklist.name] = table
    for name, table in tables.items():
        print_table(f"{name} ({'leave one corpus out' if args.loco else args.model})", table)
    if args.json:
        args.json.write_text(json.dumps(tables, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
