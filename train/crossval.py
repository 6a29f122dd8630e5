"""Choose the keep-model's settings on the training labels alone: leave one training corpus out.

    python -m train.crossval --c 0.5 --c 2          # one row per setting: unit AUC and facts kept at 1/6

For each training corpus, a model is trained on the others and scored on that corpus's documents, both as
unit AUC (the labels' positives against the rest) and as the share of the expert's facts that a 1/6 prune
keeps (the labels written as a checklist with inline text, run through `python -m evals`). Nothing here reads
evals/checklists or ../shared/evals-data, so what is chosen here is not tuned on the figures the card reports.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from train.corpus import TEXTS, load_texts, read_labels
from train.evaluate import run_evals
from train.keep_model import C, HASH_BITS, analyse_all, auc, corpus_of, fit


def write_checklist(path: Path, examples, texts: dict[str, str]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for e in examples:
            r = e.record
            facts = [{"quote": f.quote, "kind": f.kind, "why": f.why} for f in r.facts]
            out.write(json.dumps({"id": r.id, "domain": r.domain, "lang": r.lang, "text": texts[r.id],
                                  "facts": facts}, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.crossval", description=__doc__.splitlines()[0])
    parser.add_argument("labels", nargs="*", type=Path)
    parser.add_argument("--texts", type=Path, default=TEXTS)
    parser.add_argument("--c", type=float, action="append", help="inverse L2 strength (repeatable)")
    parser.add_argument("--ratio", default="1/6")
    parser.add_argument("--no-prune", action="store_true", help="unit AUC only")
    parser.add_argument("--power", type=float, action="append", help="selection power (repeatable)")
    parser.add_argument("--mode", default="value", choices=("value", "mix"), help="selection mode (catp.scoring.keep)")
    args = parser.parse_args(argv)
    from catp.scoring.keep import KeepModel
    from train.keep_model import save

    texts = load_texts(args.texts)
    examples = analyse_all(read_labels(args.labels or None), texts)
    corpora = sorted({corpus_of(e.record) for e in examples})
    powers = args.power or [1.0]
    for c in args.c or [C]:
        ys, ps = [], []
        kept = {power: [0, 0] for power in powers}
        with tempfile.TemporaryDirectory() as scratch:
            for corpus in corpora:
                train = [e for e in examples if corpus_of(e.record) != corpus]
                held = [e for e in examples if corpus_of(e.record) == corpus]
                tables, named, vocabulary = fit(train, HASH_BITS, c)
                checklist = Path(scratch) / f"{corpus}.jsonl"
                write_checklist(checklist, held, texts)
                for power in powers:
                    folder = Path(scratch) / f"{corpus}-{power}"
                    save(folder, tables, named, vocabulary, {"selection": {"mode": args.mode, "power": power}})
                    if power == powers[0]:
                        model = KeepModel.load(folder)
                        ys.extend(e.y for e in held)
                        ps.extend(model.probabilities(e.doc) for e in held)
                    if args.no_prune:
                        continue
                    results = run_evals(checklist, str(folder), Path(scratch) / f"ev-{corpus}-{power}",
                                        ratios=(args.ratio,))
                    found = results["sets"][checklist.stem]["methods"]["catp"][args.ratio]
                    kept[power][0] += sum(d["kept"] for d in found["per_doc"].values())
                    kept[power][1] += sum(d["n"] for d in found["per_doc"].values())
                    print(f"  c={c} power={power} {corpus}: {len(held)} docs, facts kept {found['kept']['all']:.3f}",
                          flush=True)
        print(f"c={c}: unit AUC {auc(np.concatenate(ys), np.concatenate(ps)):.3f} (left-out corpora pooled)")
        for power, (k, n) in kept.items():
            if n:
                print(f"c={c} {args.mode} power={power}: facts kept at {args.ratio} {k / n:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
