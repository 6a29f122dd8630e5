"""Coverage-guided fuzzing of pruning (atheris / libFuzzer).

Each input drives one call: `Pruner.prune(text)` on fuzzed Unicode, or `Pruner.prune_bytes(data)` on
fuzzed bytes (encoding detection included), with a fuzzed budget or ratio, sometimes a question and
sometimes an --encoding override. A `CatpError` is an expected outcome (bad input, said in one line);
any other exception is a crash. Every result is also checked: an ordered extract of the input, within
the budget in the real tokenizer.

    python fuzz/fuzz_prune.py -atheris_runs=100000 -max_len=512 -artifact_prefix=/tmp/fz/ /tmp/fz/prune

(the corpus folder must exist; crash files go to -artifact_prefix, by default the current folder). One Pruner
is reused (rules, tokenizer and taggers load once). docs/reliability.md records the runs.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["catp"]):
    from catp.errors import CatpError
    from catp.pipeline import Pruner

SEEDS = [
    "第五条 违约责任\n甲方应于2024年3月5日前向乙方支付违约金三百万元。但是，如果乙方未按期交付，甲方有权解除本合同。\n",
    "ARTICLE 7 TERMINATION\nThe Licensee shall not assign this Agreement. Fee: $5,000 within thirty (30) days.\n",
    "项目 | 2024年 | 2023年\n营业收入 | 1,234.5 | 1,100.2\n患者否认高血压病史，体温38.3℃。",
    "Mr. Smith of the U.S. signed on Jan. 5, 2024. IN WITNESS WHEREOF, for the avoidance of doubt.",
]
ENCODINGS = [None, None, None, "utf-8", "gb18030", "big5", "utf-16", "latin-1", "no-such-codec"]
QUESTIONS = [None, None, "违约金是多少？", "What is the fee?"]

PRUNER = Pruner()
TOKENS = PRUNER.tokens


def check(result, text: str, budget: int) -> None:
    spans = result.kept
    for a, b in zip(spans, spans[1:]):
        assert a.end < b.start, "kept spans overlap or are out of order"
    assert all(0 <= s.start < s.end <= len(text) for s in spans), "span outside the text"
    assert result.text == result.gap_marker.join(text[s.start : s.end] for s in spans), "not an extract"
    assert TOKENS.count(result.text) == result.stats.output_tokens <= budget, "over budget"


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    mode = fdp.ConsumeIntInRange(0, 3)
    budget = fdp.ConsumeIntInRange(0, 300)
    question = QUESTIONS[fdp.ConsumeIntInRange(0, len(QUESTIONS) - 1)]
    use_ratio = fdp.ConsumeIntInRange(0, 5) == 0
    ratio = fdp.ConsumeUnicodeNoSurrogates(8) if use_ratio else None
    kwargs = {"ratio": ratio} if use_ratio else {"budget": budget}
    try:
        if mode == 0:  # raw bytes through detection
            raw = fdp.ConsumeBytes(fdp.remaining_bytes())
            result = PRUNER.prune_bytes(raw, question=question, **kwargs)
            text = None
        elif mode == 1:  # bytes with an --encoding override
            encoding = ENCODINGS[fdp.ConsumeIntInRange(0, len(ENCODINGS) - 1)]
            raw = fdp.ConsumeBytes(fdp.remaining_bytes())
            result = PRUNER.prune_bytes(raw, encoding=encoding, question=question, **kwargs)
            text = None
        elif mode == 2:  # any Unicode string (surrogates included: they must be refused, not crash)
            text = fdp.ConsumeUnicode(fdp.remaining_bytes())
            result = PRUNER.prune(text, question=question, **kwargs)
        else:  # realistic text with fuzzed insertions
            seed = SEEDS[fdp.ConsumeIntInRange(0, len(SEEDS) - 1)]
            cut = fdp.ConsumeIntInRange(0, len(seed))
            text = seed[:cut] + fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes()) + seed[cut:]
            result = PRUNER.prune(text, question=question, **kwargs)
    except CatpError:
        return
    if text is None:  # recover the decoded text from the result's own report
        return check_bytes(result)
    check(result, text, result.stats.budget)


def check_bytes(result) -> None:
    assert result.stats.output_tokens <= result.stats.budget, "over budget"
    assert TOKENS.count(result.text) == result.stats.output_tokens
    spans = result.kept
    for a, b in zip(spans, spans[1:]):
        assert a.end < b.start, "kept spans overlap or are out of order"


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
