"""Faithfulness of the JSON result on real and odd text, at many budgets and gap markers.

`check()` knows nothing of catp's internals: it reads the result as a user would (`--format json`) and
the analysed Document's protected spans. The test runs a sample in seconds; run this file as a script
to check every document of the shared evals data and examples/ (minutes):

    PYTHONPATH=. python tests/unit/test_faithful.py [--sets cuad,tatqa] [--limit N]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _samples import ROOT, evals_data  # noqa: E402

from catp.document import Action  # noqa: E402
from catp.pipeline import Pruner  # noqa: E402
from catp.result import PruneResult  # noqa: E402

BUDGETS = (0, 1, 2, 5, 40)
RATIOS = ("1/100", "1/6", "1/2", "1")


def check(pruner: Pruner, text: str, *, budget=None, ratio=None, question=None) -> PruneResult:
    """Prune `text` and assert every promise the JSON result makes. Returns the result."""
    doc = pruner.analyse(text, budget=budget, ratio=ratio, question=question)
    result = pruner.finish(doc)
    data = json.loads(result.model_dump_json())
    assert PruneResult.model_validate(data) == result
    where = f"budget={budget} ratio={ratio} marker={pruner.gap_marker!r}"
    count = pruner.tokens.count
    spans, marker, out = data["kept"], data["gap_marker"], data["text"]
    stats = data["stats"]
    # spans: ordered, disjoint, not touching (touching pieces are one piece), inside the input, with reasons
    for s in spans:
        assert 0 <= s["start"] < s["end"] <= len(text), (where, s)
        assert s["reasons"] and all(isinstance(r, str) and r for r in s["reasons"]), (where, s)
    for a, b in zip(spans, spans[1:]):
        assert a["end"] < b["start"], (where, a, b)
    # the text is the pieces joined by the marker
    assert marker == pruner.gap_marker
    assert out == marker.join(text[s["start"]:s["end"]] for s in spans), where
    # never over the budget, counted by the tokenizer; the stats agree with the text
    n_in = count(text)
    expected_budget = budget if budget is not None else int(_fraction(ratio) * n_in)
    assert stats["budget"] == expected_budget, where
    assert stats["input_tokens"] == n_in, where
    assert stats["output_tokens"] == count(out) <= expected_budget, (where, count(out))
    assert stats["ratio"] == pytest.approx(count(out) / n_in, abs=1e-6)
    assert stats["units_kept"] <= stats["units_total"]
    assert (stats["units_kept"] == 0) == (not spans), where
    # protected content: every protected span not inside a kept piece is reported, and only those
    protected = {(sp.start, sp.end, sp.rule_id) for sp in doc.spans if sp.action is Action.PROTECT}
    inside = {p for p in protected if any(s["start"] <= p[0] and p[1] <= s["end"] for s in spans)}
    dropped = [(d["start"], d["end"], d["rule_id"]) for d in data["dropped_protected"]]
    assert len(set(dropped)) == len(dropped), (where, "a span reported twice")
    assert set(dropped) == protected - inside, where
    for d in data["dropped_protected"]:
        assert d["text"] == text[d["start"]:d["end"]]
    totals = {k: sum(c[k] for c in stats["per_category"].values()) for k in ("found", "kept", "dropped")}
    assert totals == {"found": len(protected), "kept": len(protected) - len(dropped), "dropped": len(dropped)}
    if dropped:
        assert any(str(len(dropped)) in w and "protected" in w for w in data["warnings"]), where
    # the same input gives the same output (a fresh Pruner: no cache)
    again = Pruner(domain=pruner.domain, tokenizer=pruner.tokens, gap_marker=pruner.gap_marker)
    twin = again.prune(text, budget=budget, ratio=ratio, question=question)
    assert twin.text == result.text and twin.kept == result.kept, where
    return result


def _fraction(ratio) -> float:
    from fractions import Fraction

    return float(Fraction(str(ratio)))


def all_budgets(pruner: Pruner, text: str, *, question=None) -> None:
    n = pruner.tokens.count(text)
    for budget in (*BUDGETS, n - 1, n, n + 7):
        if budget >= 0:
            check(pruner, text, budget=budget, question=question)
    for ratio in RATIOS:
        check(pruner, text, ratio=ratio, question=question)


# -- the sample -----------------------------------------------------------------------------------------

ODD = {
    "crlf": "Section 1. Payment.\r\nThe Buyer shall pay USD 1,000,000 on 1 March 2024.\r\n\r\n"
            "Section 2. Term.\r\nThis Agreement ends on 31 December 2025 unless renewed.\r\n" * 8,
    "bom": "\ufeff甲方：北京某某科技有限公司。乙方应于2024年3月1日前支付人民币100万元。" * 10,
    "nul": "The fee is $5,000.\x00 Payment due on 2024-01-02.\x00\x00 Parties: Acme Inc. and Beta LLC.\n" * 10,
    "zero_width": "Th\u200be Lessee shall pay\u200d $12,000 per year.\u2060 Notice by 5 May 2023.\ufeff\n" * 12,
    "combining": "Cafe\u0301 Rene\u0301 owes \u20ac3.000 since 3 juin 2021. Zoe\u0308 agrees.\n" * 12,
    "emoji": "Total 👍🏽 due: $3,400 on 2022-02-02 🇺🇸. Family 👨‍👩‍👧 signed. 甲方签字😀。\n" * 12,
    "long_line": "x" * 200_000,
    "long_line_digits": "1234567890" * 20_000 + "\nThe amount is $5.",
    "mixed": "本合同（the \"Agreement\"）由 Acme Corp.（甲方）与乙方于2024年1月1日签订。Payment: USD 10,000，"
             "人民币五万元整。The Parties agree that 违约金为合同金额的10%.\n" * 15,
    "combining_only": "\u0301\u0302\u0303 " * 500 + "The fee is $10.",
    "one_char": "a",
    "whitespace_edges": "\n\n   The fee is $10 due 2024-01-01.   \n\n",
}
MARKERS = (" … ", "", "\n---\n\n", "[" + "gap " * 50 + "]")


def _sample_docs() -> list[tuple[str, str]]:
    docs = [(f"examples/{p.name}", p.read_text(encoding="utf-8")[:6000])
            for p in sorted((ROOT / "examples").glob("*.txt"))]
    folder = evals_data()
    if folder is not None:
        for name in ("cuad", "cail2019_cjrc", "ccks2017_cner", "e3c_en", "tatqa"):
            with open(folder / f"{name}.dev.jsonl", encoding="utf-8") as fh:
                doc = json.loads(fh.readline())
            docs.append((name, doc["text"][:8000]))
    return docs


@pytest.fixture(scope="module")
def qwen_pruner():
    return Pruner()


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_text(qwen_pruner, name):
    all_budgets(qwen_pruner, ODD[name])


@pytest.mark.parametrize("marker", MARKERS)
def test_gap_markers(marker):
    pruner = Pruner(gap_marker=marker)
    for name in ("crlf", "mixed", "emoji"):
        for budget in (0, 1, 5, 30, 60, 200):
            check(pruner, ODD[name], budget=budget)
        check(pruner, ODD[name], ratio="1/6")


def test_real_documents(qwen_pruner):
    for _, text in _sample_docs():
        for budget in (0, 1, 2, 5, 300):
            check(qwen_pruner, text, budget=budget)
        check(qwen_pruner, text, ratio="1/6")


def test_with_a_question(qwen_pruner):
    text = _sample_docs()[-1][1]
    for budget in (0, 3, 100):
        check(qwen_pruner, text, budget=budget, question="What was the revenue in 2019?")


@pytest.fixture(scope="module")
def word_level(tmp_path_factory):
    """A Hugging Face tokenizer unlike Qwen's: whitespace words, unknown words one token."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from catp.tokens import TokenCounter

    vocab = {"[UNK]": 0, "the": 1, "fee": 2, "is": 3, ".": 4, "…": 5}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path_factory.mktemp("wl") / "tokenizer.json"
    tok.save(str(path))
    return TokenCounter(tok, "word-level"), path


@pytest.mark.parametrize("name", ["crlf", "mixed", "emoji", "zero_width", "long_line", "whitespace_edges"])
def test_another_tokenizer(word_level, name):
    counter, _ = word_level
    all_budgets(Pruner(tokenizer=counter), ODD[name])


def test_another_tokenizer_on_real_text(word_level):
    counter, path = word_level
    pruner = Pruner(tokenizer=str(path))
    for _, text in _sample_docs()[:3]:
        for budget in (0, 2, 50):
            check(pruner, text, budget=budget)
        check(pruner, text, ratio="1/6")


# -- everything, once -------------------------------------------------------------------------------------

def main(argv: list[str]) -> int:
    import argparse
    import time

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="cuad,cail2019_cjrc,ccks2017_cner,e3c_en,tatqa")
    parser.add_argument("--limit", type=int, default=0, help="documents per set (0: all)")
    args = parser.parse_args(argv)
    pruner = Pruner()
    docs = [(f"examples/{p.name}", p.read_text(encoding="utf-8")) for p in sorted((ROOT / "examples").glob("*.txt"))]
    for name in args.sets.split(","):
        with open(evals_data() / f"{name}.dev.jsonl", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if args.limit and i >= args.limit:
                    break
                row = json.loads(line)
                docs.append((row["id"], row["text"]))
    failures = 0
    started = time.time()
    for i, (name, text) in enumerate(docs):
        try:
            all_budgets(pruner, text)
        except AssertionError as exc:
            failures += 1
            print(f"FAIL {name}: {str(exc)[:500]}", flush=True)
        pruner.clear_cache()
        if i % 20 == 0:
            print(f"{i + 1}/{len(docs)} documents, {failures} failed, {time.time() - started:.0f}s", flush=True)
    print(f"{len(docs)} documents, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def test_a_small_trained_bpe_tokenizer(tiny_model_dir):
    """The test model's own byte-level BPE (1,024 tokens, trained here): many more tokens per word."""
    pruner = Pruner(tokenizer=str(tiny_model_dir))
    for name in ("mixed", "emoji", "combining", "crlf"):
        all_budgets(pruner, ODD[name])
    for _, text in _sample_docs()[:4]:
        for budget in (0, 3, 200):
            check(pruner, text, budget=budget)
        check(pruner, text, ratio="1/6")
