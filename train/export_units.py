"""Write the unit-level data the GPU keep-lm trains and predicts on (train/keep_lm.py), into .keeplm/ (git-ignored).

    python -m train.export_units            # .keeplm/train.jsonl (labelled documents) and .keeplm/eval.jsonl

Each line: id, corpus, lang, domain, text, catp's units ([start, end]), which are deleted (boilerplate), and for
training documents each unit's label and weight (train.keep_model.unit_targets). eval.jsonl holds the
documents of evals/checklists/dev.jsonl and examples.jsonl, without labels.
"""

from __future__ import annotations

import json
from pathlib import Path

from train.corpus import TEXTS, corpus_of, load_texts, read_labels
from train.keep_model import analyse_all

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".keeplm"
CHECKLISTS = ("evals/checklists/dev.jsonl", "evals/checklists/examples.jsonl")


def units_of(doc) -> dict:
    return {"lang": doc.lang, "domain": doc.domain, "text": doc.text,
            "units": [[u.start, u.end] for u in doc.units], "deleted": [bool(d) for d in doc.columns.deleted]}


def main() -> int:
    from catp.pipeline import Pruner
    from evals.loaders.checklist import load_checklists

    OUT.mkdir(exist_ok=True)
    with (OUT / "train.jsonl").open("w", encoding="utf-8") as out:
        for e in analyse_all(read_labels(), load_texts(TEXTS)):
            row = {"id": e.record.id, "corpus": corpus_of(e.record), **units_of(e.doc), "y": e.y.tolist(),
                   "weight": e.weight.tolist()}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    pruners: dict[str, Pruner] = {}
    with (OUT / "eval.jsonl").open("w", encoding="utf-8") as out:
        for checklist in CHECKLISTS:
            for data in load_checklists(ROOT / checklist):
                for doc in data.docs:
                    pruner = pruners.setdefault(doc.domain, Pruner(domain=doc.domain))
                    analysed = pruner.analyse(doc.text, ratio="1/6")
                    out.write(json.dumps({"id": doc.id, "set": data.name, **units_of(analysed)},
                                         ensure_ascii=False) + "\n")
    print(f"-> {OUT}/train.jsonl, {OUT}/eval.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
