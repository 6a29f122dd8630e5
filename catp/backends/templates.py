"""Prompt templates: where the pruned document and the question go. One for zh, one for en.

A template file (YAML or JSON) holds either `system`/`user` keys (used for every language)
or `en:` and `zh:` sections that each hold them. `user` must contain `{document}` and
`{question}`; `{gap}` anywhere becomes the gap marker that stands for omitted text.
Placeholders are replaced literally, so braces in documents are safe.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError, field_validator

from catp.errors import InputError


class PromptTemplate(BaseModel):
    system: str | None = None
    user: str

    @field_validator("user")
    @classmethod
    def _has_slots(cls, value: str) -> str:
        missing = [s for s in ("{document}", "{question}") if s not in value]
        if missing:
            raise ValueError(f"the user template must contain {' and '.join(missing)}")
        return value

    def render(self, document: str, question: str, *, gap: str = "") -> list[dict[str, str]]:
        """System message (if any), then the user message with document and question filled in."""
        values = {"document": document, "question": question, "gap": gap}

        def fill(text: str) -> str:  # one pass: text put in is never scanned again
            return _SLOT.sub(lambda m: values[m.group(1)], text)

        messages = [{"role": "system", "content": fill(self.system)}] if self.system else []
        return [*messages, {"role": "user", "content": fill(self.user)}]


_SLOT = re.compile(r"\{(document|question|gap)\}")

EN = PromptTemplate(
    system=("You answer questions about a document. The document was shortened: only excerpts are kept, "
            "in their original order, and each omission is marked with {gap}. Answer only from the "
            "excerpts. If they do not contain the answer, say so."),
    user="Document:\n{document}\n\nQuestion: {question}",
)
ZH = PromptTemplate(
    system="你根据文档回答问题。文档已被压缩：只保留原文片段，顺序不变，每处省略用 {gap} 标出。只根据这些片段回答；如果片段中没有答案，请直接说明。",
    user="文档：\n{document}\n\n问题：{question}",
)
DEFAULTS = {"en": EN, "zh": ZH}


def load_templates(path: str | Path | None) -> dict[str, PromptTemplate]:
    """The default zh/en templates, overridden by a template file when one is given."""
    if path is None:
        return dict(DEFAULTS)
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
        data = json.loads(raw) if p.suffix == ".json" else yaml.safe_load(raw)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise InputError(f"{p}: cannot read the template file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(data, dict):
        raise InputError(f"{p}: a template file must be a mapping with 'user' (and 'system'), or 'en'/'zh' sections")
    try:
        if "user" in data:
            one = PromptTemplate.model_validate(data)
            return {"en": one, "zh": one}
        unknown = set(data) - set(DEFAULTS)
        if unknown:
            raise InputError(f"{p}: unknown section(s) {', '.join(sorted(unknown))}; use 'en' and 'zh'")
        return {**DEFAULTS, **{lang: PromptTemplate.model_validate(v) for lang, v in data.items()}}
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "template"
        raise InputError(f"{p}: {where}: {first['msg']}") from exc
