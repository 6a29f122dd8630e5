"""The keep-model's own cost on a 128K-token document, against one pass of the tokenizer (CPU time, least of 3).

    python benchmarks/bench_keep.py

Figures and the command go in docs/keep-model.md ("Speed"). The issue's bar: scoring 128K tokens costs at most
one tokenizer pass on one core.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import corpora  # noqa: E402
from catp import Pruner  # noqa: E402
from catp.scoring.keep import KeepModel  # noqa: E402
from catp.scoring.keep_features import text_buckets, unit_features  # noqa: E402
from catp.tokens import load_token_counter  # noqa: E402


def least(run, rounds: int = 3) -> float:
    spent = []
    for _ in range(rounds):
        start = time.process_time()
        run()
        spent.append(time.process_time() - start)
    return min(spent)


def main() -> None:
    model, tokenizer = KeepModel.load(), load_token_counter()._tok
    for kind, domain in (("cuad", "legal"), ("zh", "legal")):
        text = corpora.build(kind, 128 * 1024)
        doc = Pruner(domain=domain).analyse(text, ratio="1/6")
        scoring = least(lambda: model.probabilities(doc))
        named = least(lambda: unit_features(doc))
        grams = least(lambda: text_buckets(doc.text, model.bits))
        encode = least(lambda: tokenizer.encode(text, add_special_tokens=False))
        print(f"{kind} 128K ({len(doc.units):,} units): keep-model {scoring:.3f} s (named features {named:.3f} s, "
              f"n-gram hashing {grams:.3f} s); tokenizer pass {encode:.3f} s; ratio {scoring / encode:.2f}")


if __name__ == "__main__":
    main()
