"""TAT-QA raw json: [{table: {table: rows}, paragraphs: [...], questions: [...]}]."""

from __future__ import annotations

import json
from pathlib import Path

from evals.loaders.base import DataError, head_of, set_name
from evals.schema import DataSet, EvalDoc, Gold, Question


def is_tatqa_raw(path: Path) -> bool:
    head = head_of(path, 2000) if path.suffix == ".json" else ""
    return head.lstrip().startswith("[") and '"paragraphs"' in head and '"table"' in head


def load_tatqa_raw(path: Path, min_chars: int = 15_000) -> list[DataSet]:
    try:
        contexts = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg})") from exc
    docs, builder = [], _TatqaBuilder()
    for n, context in enumerate(contexts, 1):
        builder.add(context, n)
        if len(builder.text) >= min_chars:
            docs.append(builder.build(f"{set_name(path)}-{len(docs) + 1:03d}"))
            builder = _TatqaBuilder()
    if builder.text:
        docs.append(builder.build(f"{set_name(path)}-{len(docs) + 1:03d}"))
    return [DataSet(set_name(path), str(path), docs)]


class _TatqaBuilder:
    """Joins contexts: header line, table rows as 'a | b', then paragraphs."""

    def __init__(self) -> None:
        self.text, self.gold, self.questions = "", [], []

    def _append(self, piece: str) -> tuple[int, int]:
        start = len(self.text)
        self.text += piece + "\n"
        return start, start + len(piece)

    def add(self, context: dict, number: int) -> None:
        self._append(f"=== Excerpt {number} ===")
        base = len(self.text)
        rows = (context.get("table") or {}).get("table") or []
        for row in rows:
            self._append(" | ".join(str(c) for c in row))
        self._append("")
        paragraphs = {}
        for p in sorted(context.get("paragraphs", []), key=lambda p: p.get("order", 0)):
            start, end = self._append(p.get("text", ""))
            self._append("")
            paragraphs[str(p.get("order"))] = (start, end)
        context_text = self.text[base:]
        for q in context.get("questions", []):
            index = []
            for order in q.get("rel_paragraphs", []) or []:
                if str(order) in paragraphs and paragraphs[str(order)][1] > paragraphs[str(order)][0]:
                    start, end = paragraphs[str(order)]
                    index.append(self._gold(start, end, "evidence", "TAT-QA rel_paragraph"))
            answer = q.get("answer")
            spans = answer if isinstance(answer, list) else [answer]
            if q.get("answer_type") in ("span", "multi-span"):
                for span in spans:
                    found = _unique(context_text, str(span))
                    if found is not None:
                        index.append(self._gold(base + found, base + found + len(str(span)), "answer",
                                                f"TAT-QA answer ({q.get('answer_type')})"))
            for fact in q.get("facts", []) or []:
                found = _unique(context_text, str(fact))
                if found is not None:
                    index.append(self._gold(base + found, base + found + len(str(fact)), "number",
                                            f"TAT-QA fact ({q.get('answer_type')})"))
            if index:
                self.questions.append(Question(question=q.get("question", ""), answer=str(answer),
                                               gold_index=index, support="all"))

    def _gold(self, start: int, end: int, kind: str, label: str) -> int:
        self.gold.append(Gold(start=start, end=end, quote=self.text[start:end], kind=kind, label=label))
        return len(self.gold) - 1

    def build(self, doc_id: str) -> EvalDoc:
        return EvalDoc(id=doc_id, domain="finance", lang="en", source="TAT-QA raw json",
                       text=self.text, gold=self.gold, questions=self.questions)


def _unique(text: str, needle: str) -> int | None:
    if not needle.strip():
        return None
    first = text.find(needle)
    return first if first >= 0 and text.find(needle, first + 1) < 0 else None
