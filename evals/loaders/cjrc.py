"""CAIL2019 reading comprehension (CJRC), SQuAD-style json: {data: [{paragraphs: [...]}]}."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from evals.loaders.base import DataError, head_of, set_name
from evals.schema import DataSet, EvalDoc, Gold, Question


def is_cjrc_raw(path: Path) -> bool:
    head = head_of(path) if path.suffix == ".json" else ""
    return head.lstrip().startswith("{") and '"paragraphs"' in head and '"qas"' in head


def load_cjrc_raw(path: Path, min_chars: int = 15_000) -> list[DataSet]:
    """Cases joined in file order (per `domain`: civil, criminal) into documents of at least
    `min_chars`, each case under a header line 【案件 N｜casename】. Every distinct span answer
    of a question is a gold item labelled with how many annotators gave it; YES/NO questions are
    kept without gold, unanswerable ones (`is_impossible`) are left out."""
    try:
        cases = json.loads(path.read_text(encoding="utf-8")).get("data")
    except (json.JSONDecodeError, AttributeError) as exc:
        raise DataError(f"{path}: not a CJRC/SQuAD json object with 'data'") from exc
    if not isinstance(cases, list):
        raise DataError(f"{path}: 'data' is not a list of cases")
    docs, warnings, builders = [], [], {}
    for n, case in enumerate(cases, 1):
        domain = str(case.get("domain", ""))
        builder = builders.setdefault(domain, _CjrcBuilder(domain))
        for paragraph in case.get("paragraphs", []):
            warnings += builder.add(paragraph, case.get("caseid", n), f"{path}: case {case.get('caseid', n)}")
        if len(builder.text) >= min_chars:
            docs.append(builder.build(f"{set_name(path)}-{len(docs) + 1:03d}"))
            builders[domain] = _CjrcBuilder(domain)
    docs += [b.build(f"{set_name(path)}-{len(docs) + i + 1:03d}") for i, b in enumerate(builders.values()) if b.text]
    return [DataSet(set_name(path), str(path), docs, warnings)]


class _CjrcBuilder:
    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.text, self.gold, self.questions, self.case_ids = "", [], [], []
        self.seen: dict[tuple[int, int], int] = {}

    def add(self, paragraph: dict, case_id, where: str) -> list[str]:
        context = paragraph.get("context", "")
        if self.text:
            self.text += "\n\n"
        self.text += f"【案件 {case_id}｜{paragraph.get('casename', '')}】\n"
        base = len(self.text)
        self.text += context
        self.case_ids.append(str(case_id))
        warnings = []
        for qa in paragraph.get("qas", []):
            if str(qa.get("is_impossible", "false")).lower() == "true":
                continue
            annotators = len(qa.get("answers", []))
            answers = [a for a in qa.get("answers", []) if str(a.get("text", "")).strip()]
            if not answers:
                continue
            spans: dict[tuple[int, int], int] = {}
            for a in answers:
                start, text = int(a.get("answer_start", -1)), str(a["text"])
                if start < 0:  # YES / NO
                    continue
                if context[start:start + len(text)] != text:
                    warnings.append(f"{where}: answer {text[:20]!r} is not at {start}")
                    continue
                spans[(start, start + len(text))] = spans.get((start, start + len(text)), 0) + 1
            index = []
            for (start, end), votes in spans.items():
                key = (base + start, base + end)
                if key not in self.seen:  # two questions answered by the same span share one gold item
                    self.seen[key] = len(self.gold)
                    self.gold.append(Gold(start=key[0], end=key[1], quote=context[start:end], kind="answer",
                                          label=f"CJRC span answer ({votes}/{annotators} annotators)"))
                index.append(self.seen[key])
            answer = Counter(str(a["text"]) for a in answers).most_common(1)[0][0]
            self.questions.append(Question(question=qa.get("question", ""), answer=answer, gold_index=index,
                                           support="any"))
        return warnings

    def build(self, doc_id: str) -> EvalDoc:
        cases = f"cases {self.case_ids[0]}-{self.case_ids[-1]}" if self.case_ids else "no cases"
        return EvalDoc(id=doc_id, domain="legal", lang="zh", text=self.text, gold=self.gold,
                       questions=self.questions,
                       source=f"CAIL2019 reading comprehension (CJRC) raw json, domain={self.domain}, {cases}")
