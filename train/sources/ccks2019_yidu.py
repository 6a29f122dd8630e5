"""CCKS 2019 Chinese clinical NER (Yidu-S4K) training records, joined into documents.

Source file: the JSON-lines training set (one record per line, {"originalText": ..., "entities": [...]}), e.g.
MenglinLu/Chinese-clinical-NER preprocess/data_origin/subtask1_training_afterrevise.txt (1,000 records).
Consecutive records are joined in their original order, each under a header line `〔病历 N〕` (N = the
record's 1-based line number), until a document reaches MIN_CHARS; the text of each record is kept as is.
"""

from __future__ import annotations

import json

from train.sources import extractor

MIN_CHARS = 3000
MAX_CHARS = 8000


def _records(data: bytes) -> list[str]:
    texts = []
    for line in data.decode("utf-8-sig").splitlines():
        if line.strip():
            texts.append(json.loads(line)["originalText"])
    return texts


@extractor("ccks2019_yidu_joined")
def ccks2019_yidu_joined(data: bytes) -> dict[str, str]:
    docs: dict[str, str] = {}
    parts: list[str] = []
    first = 0
    size = 0
    texts = _records(data)
    for number, text in enumerate(texts, 1):
        block = f"〔病历 {number}〕\n{text.strip()}"
        if parts and size + len(block) + 1 > MAX_CHARS:
            docs[f"r{first:04d}-{number - 1:04d}"] = "\n".join(parts)
            parts, size = [], 0
        if not parts:
            first = number
        parts.append(block)
        size += len(block) + 1
        if size >= MIN_CHARS:
            docs[f"r{first:04d}-{number:04d}"] = "\n".join(parts)
            parts, size = [], 0
    if parts:
        docs[f"r{first:04d}-{len(texts):04d}"] = "\n".join(parts)
    return docs
