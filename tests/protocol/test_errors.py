from __future__ import annotations

import pytest

from durable_responses.protocol import errors
from durable_responses.protocol.errors import ProtocolError, error_body


def test_body_shape() -> None:
    err = ProtocolError(400, "bad", param="input", code="invalid_value")
    assert err.body() == {
        "error": {
            "message": "bad",
            "type": "invalid_request_error",
            "param": "input",
            "code": "invalid_value",
        }
    }
    assert str(err) == "bad"


@pytest.mark.parametrize(
    ("err", "status", "type_", "code"),
    [
        (errors.bad_request("m"), 400, "invalid_request_error", "invalid_request"),
        (errors.unauthorized("m"), 401, "authentication_error", "invalid_api_key"),
        (errors.not_found("m"), 404, "invalid_request_error", "not_found"),
        (errors.conflict("m"), 409, "invalid_request_error", "conflict"),
        (errors.payload_too_large(1024), 413, "invalid_request_error", "payload_too_large"),
        (errors.unprocessable("m"), 422, "invalid_request_error", "unprocessable"),
        (errors.rate_limited("m"), 429, "rate_limit_error", "rate_limit_exceeded"),
        (errors.server_error(), 500, "server_error", "server_error"),
        (errors.unavailable("m"), 503, "server_error", "unavailable"),
    ],
)
def test_constructors(err: ProtocolError, status: int, type_: str, code: str) -> None:
    assert err.status == status
    body = err.body()["error"]
    assert body["type"] == type_
    assert body["code"] == code
    assert set(body) == {"message", "type", "param", "code"}


def test_constructor_params() -> None:
    assert errors.bad_request("m", param="x", code="c").body()["error"]["param"] == "x"
    assert errors.not_found("m", param="id").param == "id"
    assert errors.conflict("m", code="already_cancelled").code == "already_cancelled"
    assert "1024" in errors.payload_too_large(1024).message
    assert errors.server_error().message == "The server had an error while processing your request."


def test_error_body_default_type() -> None:
    assert error_body(404, "x")["error"]["type"] == "invalid_request_error"
    assert error_body(502, "x")["error"]["type"] == "server_error"
    assert error_body(401, "x")["error"]["type"] == "authentication_error"
    assert error_body(400, "x", type="t", param="p", code="c") == {
        "error": {"message": "x", "type": "t", "param": "p", "code": "c"}
    }
