"""JSON text for what catp writes (rows, results). Strings can hold lone surrogates: a file name that is not
UTF-8 (GBK from a Windows zip) is a str by os.fsdecode's surrogateescape, and names are data, kept whole. JSON
writes such a character as its escape (\\udcb9), which reads back as the same str; UTF-8 cannot encode it raw."""

from __future__ import annotations

import json
import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """Each lone surrogate as the six characters of its JSON (and Python) escape: \\udcb9."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_line(obj) -> str:
    """json.dumps(obj, ensure_ascii=False), lone surrogates escaped (inside strings, the only place they occur)."""
    return escape_surrogates(json.dumps(obj, ensure_ascii=False))


def model_json(model, indent: int | None = None) -> str:
    """A pydantic model as JSON text: its own model_dump_json, or, when a string holds a lone surrogate (which
    pydantic refuses), the same data through json_line's escaping."""
    from pydantic_core import PydanticSerializationError

    try:
        return model.model_dump_json(indent=indent)
    except PydanticSerializationError:
        return escape_surrogates(json.dumps(model.model_dump(mode="json"), ensure_ascii=False, indent=indent))
