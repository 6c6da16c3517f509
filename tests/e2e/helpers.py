"""Helpers shared by the end-to-end HTTP tests: raw SSE parsing, polling, error-shape checks."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from tests.conftest import ServerProcess

TERMINAL = {"completed", "failed", "cancelled", "incomplete"}


def parse_sse(text: str) -> list[dict[str, Any]]:
    """Frames of an SSE body as dicts {event, id, data(raw str), json}; comments are dropped."""
    frames: list[dict[str, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, Any] = {}
        data_lines: list[str] = []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data_lines.append(value)
            else:
                fields[name] = value
        if not fields and not data_lines:
            continue
        fields["data"] = "\n".join(data_lines)
        fields["json"] = json.loads(fields["data"]) if data_lines else None
        frames.append(fields)
    return frames


def sse_get(
    base_url: str, path: str, *, headers: dict[str, str] | None = None, params: Any = None
) -> list[dict[str, Any]]:
    with httpx.Client(base_url=base_url, timeout=60) as c:
        r = c.get(path, headers=headers, params=params)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/event-stream")
        return parse_sse(r.text)


def assert_error_shape(resp: httpx.Response, status: int | None = None) -> dict[str, Any]:
    if status is not None:
        assert resp.status_code == status, (resp.status_code, resp.text)
    body = resp.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["type"], str)
    assert err["param"] is None or isinstance(err["param"], str)
    assert err["code"] is None or isinstance(err["code"], str)
    return err


def wait_status(
    srv: ServerProcess, rid: str, statuses: set[str] = TERMINAL, timeout: float = 30, **headers: str
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        r = httpx.get(f"{srv.base_url}/responses/{rid}", headers=headers, timeout=10)
        assert r.status_code == 200, r.text
        body = r.json()
        if body["status"] in statuses:
            return body
        time.sleep(0.1)
    raise AssertionError(f"response {rid} stuck in {body.get('status')}: {body}")
