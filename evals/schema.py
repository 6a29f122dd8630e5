"""The eval data model: one JSONL line of ../shared/evals-data is one `EvalDoc`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field, model_validator


class Gold(BaseModel):
    """A human-annotated span: `text[start:end] == quote`."""

    start: int = Field(ge=0)
    end: int
    quote: str
    kind: str
    label: str = ""
    why: str = ""  # a checklist fact's reason (evals/checklists)


class Question(BaseModel):
    question: str
    answer: str | None = None
    gold_index: list[int] = Field(default_factory=list)
    support: Literal["any", "all"] = "any"


class EvalDoc(BaseModel):
    id: str
    domain: str = "general"
    lang: str = "en"
    source: str = ""
    text: str
    gold: list[Gold] = Field(default_factory=list)
    questions: list[Question] = Field(default_factory=list)

    @model_validator(mode="after")
    def _offsets_match(self) -> "EvalDoc":
        for i, g in enumerate(self.gold):
            if not (g.start < g.end <= len(self.text)) or self.text[g.start : g.end] != g.quote:
                raise ValueError(f"gold[{i}] offsets {g.start}:{g.end} do not hold its quote")
        for q in self.questions:
            bad = [i for i in q.gold_index if not 0 <= i < len(self.gold)]
            if bad:
                raise ValueError(f"question {q.question[:40]!r} points at missing gold items {bad}")
        return self


@dataclass
class DataSet:
    """Documents from one file or raw corpus, scored together."""

    name: str
    path: str
    docs: list[EvalDoc]
    warnings: list[str] = field(default_factory=list)
    kind: str = "gold"  # "checklist": key facts (evals/checklists), scored per document and every loss listed
