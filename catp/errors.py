"""Errors a user can act on. The CLI prints them as one line, never a traceback.

Every error catp raises for bad input, rules, settings or servers is a `CatpError`:

- `InputError`: the document (empty, binary, undecodable, too large, not a str).
- `BudgetError`: no budget, both a budget and a ratio, or a bad value.
- `RuleError`: a rule file or an unknown domain; names the file, line and rule id.
- `TokenizerError`: a tokenizer that cannot be loaded or fails its hash check.
- `ModelError`: a scorer model that is missing, unsafe or fails its integrity check.
- `BackendError` (exit code 3): a vLLM server or engine failed.
- `CatpError` itself: other bad settings (an unknown scorer, a cue window out of range).
"""

from __future__ import annotations


class CatpError(Exception):
    """Base class: `str(err)` is the one-line message shown to the user."""

    exit_code = 2


class InputError(CatpError):
    """The document cannot be read: binary, empty, too large, bad encoding."""


class RuleError(CatpError):
    """A rule file is invalid. The message names the file, line and rule id."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 rule_id: str | None = None) -> None:
        where = path or "<rules>"
        if line is not None:
            where += f":{line}"
        if rule_id:
            where += f" (rule {rule_id!r})"
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.rule_id = path, line, rule_id


class BudgetError(CatpError):
    """The budget cannot be met or was given wrongly."""


class BackendError(CatpError):
    """A server or engine failed: the message names the URL and the status. It quotes what the server sent,
    which can hold line breaks: they become spaces (one line)."""

    exit_code = 3

    def __init__(self, message: str = "") -> None:
        super().__init__(" ".join(str(message).splitlines()))


class TokenizerError(CatpError):
    """The tokenizer cannot be found, loaded or trusted."""


class ModelError(CatpError):
    """A scorer model is missing, unsafe or fails its integrity check."""
