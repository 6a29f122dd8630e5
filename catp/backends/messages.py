"""Well-formed chat requests: system messages first, as one message."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from catp.decode import has_lone_surrogates
from catp.errors import InputError

ROLES = ("system", "user", "assistant", "tool")
Message = dict[str, str]


def normalize_messages(messages: Iterable[Mapping[str, str]]) -> tuple[list[Message], list[str]]:
    """Move every system message to the front (kept in order, joined into one), and say so.

    Many chat templates (Qwen, Llama 3) only honour a leading system message, and some
    raise when one appears later. Returns (messages, warnings); the input is not changed.
    """
    items = [_check(i, m) for i, m in enumerate(messages)]
    if not items:
        raise InputError("a chat request needs at least one message")
    systems = [m for m in items if m["role"] == "system"]
    others = [m for m in items if m["role"] != "system"]
    warnings: list[str] = []
    first_other = next((i for i, m in enumerate(items) if m["role"] != "system"), len(items))
    late = [i for i, m in enumerate(items) if m["role"] == "system" and i > first_other]
    if late:
        warnings.append(f"moved system message(s) at position {', '.join(map(str, late))} to the front")
    if len(systems) > 1:
        warnings.append(f"joined {len(systems)} system messages into one")
    if not systems:
        return others, warnings
    system = {"role": "system", "content": "\n\n".join(m["content"] for m in systems)}
    return [system, *others], warnings


def _check(index: int, message: Mapping[str, str]) -> Message:
    if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
        raise InputError(f"message {index}: needs 'role' and 'content'")
    role, content = message["role"], message["content"]
    if role not in ROLES:
        raise InputError(f"message {index}: unknown role {role!r} (use one of {', '.join(ROLES)})")
    if not isinstance(content, str):
        raise InputError(f"message {index}: content must be a string")
    if has_lone_surrogates(content):  # it could not be sent as JSON
        raise InputError(f"message {index} ({role}): content holds lone surrogates (not valid UTF-8)")
    return {"role": role, "content": content}
