"""SMP2023 ChatGLM financial challenge (MetaGLM/FinGLM): an annual report parsed to JSON, pages -> items.

Each item has title_hierarchy (chapter, section, ...), content_type ("text" or "excel") and content (a text,
or a table row written as a Python list literal). The extractor groups consecutive items by (chapter, section)
in the file's order and decodes them to text: a text item is one line, a table row one line of its cells joined
by " | ". Key: "chapter/section".
"""

from __future__ import annotations

import ast
import json

from train.sources import extractor


def _line(item: dict) -> str:
    content = item.get("content", "")
    if item.get("content_type") == "excel" and isinstance(content, str):
        try:
            cells = ast.literal_eval(content)
        except (ValueError, SyntaxError):
            return content.strip()
        if isinstance(cells, (list, tuple)):
            return " | ".join(str(cell).strip() for cell in cells)
    return str(content).strip()


@extractor("finglm_annual_sections")
def finglm_annual_sections(data: bytes) -> dict[str, str]:
    pages = json.loads(data.decode("utf-8"))
    sections: dict[str, list[str]] = {}
    for items in pages.values():
        for item in items:
            key = "/".join(item.get("title_hierarchy", [])[:2]) or "untitled"
            line = _line(item)
            if line:
                sections.setdefault(key, []).append(line)
    return {key: "\n".join(lines) for key, lines in sections.items()}
