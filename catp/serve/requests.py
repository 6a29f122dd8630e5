"""OpenAI request bodies: parsed, their types checked, and the `catp` control key taken out.

Only the fields the gateway reads are checked; every other field goes upstream unchanged.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from catp.serve import jsonio
from catp.serve.errors import ApiError


class CatpControl(BaseModel):
    """`extra_body={"catp": {...}}`: per-request control, removed before forwarding."""

    model_config = ConfigDict(extra="forbid")

    domain: str | None = None
    question: str | None = None
    budget: StrictInt | None = Field(default=None, ge=1)
    ratio: str | float | None = None
    mode: Literal["auto", "off", "always"] = "auto"

    @field_validator("ratio")
    @classmethod
    def _ratio(cls, value):
        if value is not None:
            from catp.errors import CatpError
            from catp.pipeline import parse_ratio

            try:
                parse_ratio(value)
            except CatpError as exc:
                raise ValueError(str(exc)) from None
        return value


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class _Common(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str | None = None
    stream: StrictBool = False
    max_tokens: StrictInt | None = Field(default=None, ge=1)


class ChatRequest(_Common):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: StrictInt | None = Field(default=None, ge=1)


class CompletionRequest(_Common):
    prompt: str | list[str] | list[int] | list[list[int]]


class Parsed(BaseModel):
    """A request body as received, and what the gateway needs of it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    raw: bytes  # the body as received: forwarded unchanged when nothing is pruned and no `catp` key was given
    body: dict[str, Any]  # the JSON without the `catp` key
    control: CatpControl
    had_control: bool
    request: ChatRequest | CompletionRequest

    @property
    def max_tokens(self) -> int | None:
        req = self.request
        return getattr(req, "max_completion_tokens", None) or req.max_tokens

    def forward_bytes(self) -> bytes:
        return jsonio.dumps(self.body) if self.had_control else self.raw


def parse(raw: bytes, kind: Literal["chat", "completions"]) -> Parsed:
    try:
        body = jsonio.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the request body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise ApiError(400, f"the request body must be a JSON object, got {type(body).__name__}",
                       code="invalid_type")
    had_control = "catp" in body
    control_data = body.pop("catp", None)
    if control_data is not None and not isinstance(control_data, dict):
        raise ApiError(400, "catp: must be an object", code="invalid_type", param="catp")
    try:
        control = CatpControl.model_validate(control_data or {})
    except ValidationError as exc:
        raise _invalid(exc, "catp.") from None
    try:
        request = (ChatRequest if kind == "chat" else CompletionRequest).model_validate(body)
    except ValidationError as exc:
        raise _invalid(exc, "") from None
    return Parsed(raw=raw, body=body, control=control, had_control=had_control, request=request)


def _invalid(exc: ValidationError, prefix: str) -> ApiError:
    first = exc.errors()[0]
    param = prefix + (".".join(map(str, first["loc"])) or "body")
    message = first["msg"]
    if first["type"] == "value_error" and "ctx" in first:  # parse_ratio's own message
        message = str(first["ctx"].get("error", message))
    return ApiError(400, f"{param}: {message}", code="invalid_type", param=param)
