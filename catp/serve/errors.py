"""Every error the gateway answers has the OpenAI error shape: {"error": {message, type, param, code}}."""

from __future__ import annotations

from starlette.responses import JSONResponse

TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
         405: "invalid_request_error", 413: "invalid_request_error", 429: "rate_limit_error",
         502: "upstream_error", 503: "service_unavailable", 504: "upstream_timeout"}


class ApiError(Exception):
    """Raised anywhere in a request's handling; `app` turns it into its JSON reply."""

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param
        self.headers = headers or {}


def error_body(status: int, message: str, code: str | None = None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": TYPES.get(status, "server_error" if status >= 500
                                                             else "invalid_request_error"),
                      "param": param, "code": code}}


def error_response(exc: ApiError) -> JSONResponse:
    return JSONResponse(error_body(exc.status, exc.message, exc.code, exc.param), status_code=exc.status,
                        headers=exc.headers)
