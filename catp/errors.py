"""Errors a user can act on. The CLI prints them as one line, never a traceback."""

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
    """A server or engine failed: the message names the URL and the status."""

    exit_code = 3


class ModelError(CatpError):
    """A scorer model is missing, unsafe or fails its integrity check."""
