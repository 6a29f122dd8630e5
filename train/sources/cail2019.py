"""CAIL2019 reading comprehension (CJRC) TEST ground truth: short fact sections joined into documents.

Source file: china-ai-law-challenge/CAIL2019 `阅读理解/data/test_ground_truth.json` (SQuAD-style JSON,
{"data": [{"caseid", "domain", "paragraphs": [{"context", "casename", "qas"}]}]}, 1,000 cases: 500 civil then
500 criminal). Never the dev ground truth (the eval set is built from it) nor big_train_data.json.

Consecutive cases of the same domain are joined in file order, each under a header line `【案件 N｜casename】`
(N = the case's 1-based position in the file), cases separated by a blank line (the layout of
../shared/evals-data/cail2019_cjrc.dev.jsonl). A document is closed once it reaches MIN_CHARS, before a case
would push it past MAX_CHARS, or when the domain changes. The contexts are kept as they are (stripped only).
Key: the document's 1-based number, three digits ("001").
"""

from __future__ import annotations

import json

from train.sources import extractor

MIN_CHARS = 4000
MAX_CHARS = 8000
SEPARATOR = "\n\n"


@extractor("cail2019_rc_joined")
def cail2019_rc_joined(data: bytes) -> dict[str, str]:
    cases = json.loads(data.decode("utf-8-sig"))["data"]
    docs: list[str] = []
    parts: list[str] = []
    domain = None

    def close() -> None:
        if parts:
            docs.append(SEPARATOR.join(parts))
            parts.clear()

    for number, case in enumerate(cases, 1):
        paragraph = case["paragraphs"][0]
        block = f"【案件 {number}｜{paragraph['casename']}】\n{paragraph['context'].strip()}"
        if case.get("domain") != domain:
            close()
            domain = case.get("domain")
        if parts and len(SEPARATOR.join(parts + [block])) > MAX_CHARS:
            close()
        parts.append(block)
        if len(SEPARATOR.join(parts)) >= MIN_CHARS:
            close()
    close()
    return {f"{n:03d}": text for n, text in enumerate(docs, 1)}
