"""Protocol errors: one exception type that carries an HTTP status and the OpenAI error body.

Invariant: every error this package raises is a `ProtocolError` whose `body()` has exactly the
OpenAI shape `{"error": {"message", "type", "param", "code"}}`, so the HTTP layer never has to
invent an error format of its own.
"""

from __future__ import annotations

from typing import Any

_DEFAULT_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
}


def _default_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return _DEFAULT_TYPES.get(status, "invalid_request_error")


def error_body(
    status: int,
    message: str,
    *,
    type: str | None = None,
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """The OpenAI error body; `type` defaults from the status (4xx invalid_request, 5xx server_error)."""
    return {
        "error": {
            "message": message,
            "type": type if type is not None else _default_type(status),
            "param": param,
            "code": code,
        }
    }


class ProtocolError(Exception):
    """A request the protocol refuses, or a server condition it reports, with its HTTP status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        # Seconds a client should wait before retrying (a `Retry-After` header), when it should.
        self.retry_after = retry_after
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, type=self.type, param=self.param, code=self.code)

    def __repr__(self) -> str:
        return (
            f"ProtocolError(status={self.status}, message={self.message!r}, type={self.type!r}, "
            f"param={self.param!r}, code={self.code!r})"
        )


def bad_request(
    message: str, *, param: str | None = None, code: str | None = "invalid_request"
) -> ProtocolError:
    return ProtocolError(400, message, param=param, code=code)


def unauthorized(message: str) -> ProtocolError:
    return ProtocolError(401, message, type="authentication_error", code="invalid_api_key")


def forbidden(message: str) -> ProtocolError:
    return ProtocolError(403, message, type="permission_error", code="forbidden")


def not_found(message: str, *, param: str | None = None) -> ProtocolError:
    return ProtocolError(404, message, param=param, code="not_found")


def conflict(message: str, *, code: str | None = "conflict", param: str | None = None) -> ProtocolError:
    return ProtocolError(409, message, param=param, code=code)


def payload_too_large(limit_bytes: int) -> ProtocolError:
    return ProtocolError(
        413,
        f"Request body too large: the limit is {limit_bytes} bytes.",
        code="payload_too_large",
    )


def unprocessable(
    message: str, *, param: str | None = None, code: str | None = "unprocessable"
) -> ProtocolError:
    return ProtocolError(422, message, param=param, code=code)


def rate_limited(message: str, *, retry_after: float | None = None) -> ProtocolError:
    return ProtocolError(
        429, message, type="rate_limit_error", code="rate_limit_exceeded", retry_after=retry_after
    )


def server_error(message: str = "The server had an error while processing your request.") -> ProtocolError:
    return ProtocolError(500, message, type="server_error", code="server_error")


def unavailable(message: str, *, retry_after: float | None = 1.0) -> ProtocolError:
    """503: the server cannot serve the request now and a retry later may succeed."""
    return ProtocolError(503, message, type="server_error", code="unavailable", retry_after=retry_after)


def database_unavailable(message: str, *, retry_after: float) -> ProtocolError:
    """503: the server's database cannot be used now (down, unreachable, full); retry later."""
    return ProtocolError(
        503, message, type="server_error", code="database_unavailable", retry_after=retry_after
    )
