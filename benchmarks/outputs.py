"""Digest of pruning outputs over the evals data, the examples and the benchmark corpora, for checking that a
performance change is behaviour-preserving: run before and after, then `diff` (or `--compare A B`).

    python benchmarks/outputs.py --out /tmp/before.jsonl
    python benchmarks/outputs.py --out /tmp/after.jsonl
    python benchmarks/outputs.py --compare /tmp/before.jsonl /tmp/after.jsonl

Runs in different processes are comparable: pruning does not depend on str hashing (selection sums
over term sets exactly, catp/select/novelty.py; tests/integration/test_determinism_processes.py checks it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import corpora  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SETS = ("cuad", "cail2019_cjrc", "ccks2017_cner", "tatqa", "e3c_en")


def digest(result) -> dict:
    data = result.model_dump()
    data["stats"].pop("elapsed_s")
    data["text_sha"] = hashlib.sha256(data.pop("text").encode()).hexdigest()[:16]
    data["dropped"] = len(data.pop("dropped_protected"))
    return data


def documents(limit: int | None):
    for name in SETS:
        with open(corpora.EVALS_DATA / f"{name}.dev.jsonl", encoding="utf-8") as fh:
            for n, line in enumerate(fh):
                if limit is not None and n >= limit:
                    break
                rec = json.loads(line)
                q = rec["questions"][0]["question"] if rec.get("questions") else None
                yield rec["id"], rec["domain"], rec["text"], q
    for path in sorted(EXAMPLES.glob("*.txt")):  # the domain detected, as `catp prune FILE` does
        yield f"example-{path.stem}", None, path.read_text(encoding="utf-8"), None
    for kind in ("cuad", "zh", *corpora.SYNTHETIC):
        yield f"bench-{kind}-32k", corpora.DOMAIN[kind], corpora.build(kind, 32_768), None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--limit", type=int, default=None, help="documents per evals set")
    ap.add_argument("--compare", nargs=2)
    args = ap.parse_args()
    if args.compare:
        a, b = ([json.loads(x) for x in open(p)] for p in args.compare)
        diff = [x["key"] for x, y in zip(a, b) if x != y]
        print(f"{len(a)} vs {len(b)} rows; {len(diff)} differ" + (": " + ", ".join(diff[:20]) if diff else ""))
        return 1 if diff or len(a) != len(b) else 0
    from catp.pipeline import Pruner

    pruner = Pruner()  # one Pruner for every domain, given per call
    with open(args.out, "w", encoding="utf-8") as out:
        for doc_id, domain, text, question in documents(args.limit):
            for ratio in ("1/6", "1/3"):
                for q in ((None, question) if question else (None,)):
                    r = pruner.prune(text, ratio=ratio, question=q, domain=domain)
                    row = {"key": f"{doc_id}|{ratio}|{'q' if q else '-'}", **digest(r)}
                    out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            print(doc_id, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
