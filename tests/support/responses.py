"""Client-side helpers shared by every suite: reading responses, waiting for their status,
checking the error body, and the records the test apps write.

Invariant: no helper swallows an error. A wait polls with plain HTTP and fails at once on
anything but 200, so a server that answers 500 (or stops answering) is a failure, never
"not terminal yet".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx

from .sse import TERMINAL_STATUSES, Frame, parse_sse
from .waits import wait_for_value

__all__ = [
    "assert_error_shape",
    "countdown_ticks",
    "dump",
    "incomplete_indexes",
    "output_texts",
    "read_jsonl",
    "read_lines",
    "read_until",
    "retrieve",
    "sse_get",
    "wait_status",
    "wait_terminal",
]


def dump(model: Any) -> dict[str, Any]:
    """An openai SDK model (or an already plain dict) as the JSON the server sent."""
    if isinstance(model, dict):
        return model
    # warnings=False: the SDK's `responses.stream()` wraps the final response in generic
    # `Parsed*` models whose serialization warns once per union member it does not match
    # (an openai-python issue: #2872); the JSON it produces is the server's either way.
    data: dict[str, Any] = model.model_dump(mode="json", exclude_unset=True, warnings=False)
    return data


def read_until(
    stream: Iterable[Any], stop: Callable[[dict[str, Any], list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """Iterate an openai SSE stream, collecting events, until `stop(event, events)` is true."""
    seen: list[dict[str, Any]] = []
    for e in stream:
        d = dump(e)
        seen.append(d)
        if stop(d, seen):
            break
    return seen


def output_texts(response: Any) -> list[str]:
    """Texts of the final `response.output` message items, in order."""
    texts: list[str] = []
    for item in dump(response).get("output", []):
        if item.get("type") == "message":
            for part in item.get("content", []):
                if part.get("type") == "output_text":
                    texts.append(part.get("text", ""))
    return texts


def countdown_ticks(n: int) -> list[str]:
    """What `durable_responses.examples.countdown` outputs for "n": tick n ... tick 0."""
    return [f"tick {i}" for i in range(n, -1, -1)]


def incomplete_indexes(events: list[dict[str, Any]]) -> set[int]:
    """Output indexes of the items a crash interrupted (closed `incomplete`)."""
    return {
        e["output_index"]
        for e in events
        if e["type"] == "response.output_item.done" and e["item"].get("status") == "incomplete"
    }


def _base(server: Any) -> str:
    return server if isinstance(server, str) else str(server.base_url)


def retrieve(server: Any, response_id: str, *, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """`GET /responses/{id}` as JSON; anything but 200 fails."""
    r = httpx.get(f"{_base(server)}/responses/{response_id}", headers=headers, timeout=30)
    assert r.status_code == 200, (r.status_code, r.text[:2000])
    body: dict[str, Any] = r.json()
    return body


def wait_status(
    server: Any,
    response_id: str,
    statuses: Iterable[str] = TERMINAL_STATUSES,
    timeout: float = 30,
    **headers: str,
) -> dict[str, Any]:
    """Poll `GET /responses/{id}` (a server object or a base URL) until its status is one of
    `statuses`; returns the Response body. A non-200 answer fails at once."""
    wanted = set(statuses)
    body: dict[str, Any] = wait_for_value(
        lambda: retrieve(server, response_id, headers=headers or None),
        lambda b: b["status"] in wanted,
        timeout,
        message=f"response {response_id} never reached {sorted(wanted)}",
    )
    return body


def wait_terminal(client: Any, response_id: str, timeout: float = 60) -> Any:
    """Poll with the openai client until the response is terminal; returns the SDK Response.
    Every error the client raises (a 500, a 404, a refused connection) propagates."""
    last: Any = wait_for_value(
        lambda: client.responses.retrieve(response_id),
        lambda r: r.status in TERMINAL_STATUSES,
        timeout,
        message=f"response {response_id} not terminal",
    )
    return last


def sse_get(
    base_url: str, path: str, *, headers: dict[str, str] | None = None, params: Any = None
) -> list[Frame]:
    """A whole SSE body (`GET`), parsed; the answer must be 200 `text/event-stream`."""
    with httpx.Client(base_url=base_url, timeout=60) as c:
        r = c.get(path, headers=headers, params=params)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/event-stream")
        return parse_sse(r.text)


def assert_error_shape(resp: httpx.Response, status: int | None = None) -> dict[str, Any]:
    """The standard error body (`{"error": {message, type, param, code}}`), optionally with `status`."""
    if status is not None:
        assert resp.status_code == status, (resp.status_code, resp.text)
    body = resp.json()
    assert set(body) == {"error"}, body
    err: dict[str, Any] = body["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["type"], str)
    assert err["param"] is None or isinstance(err["param"], str)
    assert err["code"] is None or isinstance(err["code"], str)
    return err


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON lines a test app appended (none yet: empty)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line.strip()]
