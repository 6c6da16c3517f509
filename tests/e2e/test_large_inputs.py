"""End-to-end tests of large create bodies (tens of thousands of input items, megabytes of JSON):
accepted, stored whole and in order, listed page by page, refused with the same 400s as small
bodies, idempotent under a client-chosen id; and the server keeps answering /liveness while one is
in flight (large bodies are parsed and encoded off the event loop). Runs on SQLite and PostgreSQL,
against one server per dialect shared by this module: a subprocess, not an in-process server,
because client and server are both CPU-bound here and in one interpreter they would take turns
(measured: 8-11 s per dialect for the 20,000-item test, 14-23 s in-process).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from durable_responses.protocol.ids import input_item_id
from tests.support.pg import _migrated_pg
from tests.support.responses import assert_error_shape, wait_status
from tests.support.servers import ServerProcess

# Characters that must survive JSON inside JSON (PostgreSQL's bulk creation path) unchanged.
TRICKY = 'h\u00e9 "q" \\ \U0001f389 \u0000 \n'


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    work = tmp_path_factory.mktemp("large")
    urls = iter([f"sqlite:///{work / 'large.db'}"]) if request.param == "sqlite" else _migrated_pg()
    for url in urls:
        srv = ServerProcess(database_url=url, app=None, workdir=work).start()
        try:
            yield srv
        finally:
            srv.kill()


def _item(i: int, n: int) -> dict[str, Any]:
    """The i-th of n input items, as a client sends it (every kind the echo app accepts)."""
    if i == n - 1:
        return {"role": "user", "content": "the last one"}
    kind = i % 5
    if kind == 0:
        return {"role": "user", "content": f"hello {i}"}
    if kind == 1:
        text = f"{TRICKY}{i}"
        return {
            "type": "message",
            "id": f"client_{i}",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
    if kind == 2:
        return {"role": "assistant", "content": f"reply {i}"}
    if kind == 3:
        return {
            "type": "function_call",
            "call_id": f"call_{i}",
            "name": "lookup",
            "arguments": json.dumps({"i": i}),
        }
    return {"type": "function_call_output", "call_id": f"call_{i - 1}", "output": f"result {i}"}


def _stored(i: int, n: int, rid: str) -> dict[str, Any]:
    """The i-th item as the server stores and lists it (canonical, with its id)."""
    own_id = input_item_id(rid, i)
    if i == n - 1:
        return _message(own_id, "user", "the last one")
    kind = i % 5
    if kind == 0:
        return _message(own_id, "user", f"hello {i}")
    if kind == 1:
        return _message(f"client_{i}", "user", f"{TRICKY}{i}")
    if kind == 2:
        return _message(own_id, "assistant", f"reply {i}")
    if kind == 3:
        return {
            "type": "function_call",
            "id": own_id,
            "call_id": f"call_{i}",
            "name": "lookup",
            "arguments": json.dumps({"i": i}),
            "status": "completed",
        }
    return {
        "type": "function_call_output",
        "id": own_id,
        "call_id": f"call_{i - 1}",
        "output": f"result {i}",
        "status": "completed",
    }


def _message(item_id: str, role: str, text: str) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "input_text", "text": text}
    if role == "assistant":
        part = {"type": "output_text", "text": text, "annotations": []}
    return {"type": "message", "id": item_id, "role": role, "content": [part], "status": "completed"}


def _body(n: int, **extra: Any) -> bytes:
    return json.dumps({"model": "m", "input": [_item(i, n) for i in range(n)], **extra}).encode()


def _post(c: httpx.Client, raw: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    return c.post("/responses", content=raw, headers={"content-type": "application/json", **(headers or {})})


def _all_items(c: httpx.Client, rid: str) -> list[dict[str, Any]]:
    """Every input item of `rid`, oldest first, through `after` paging (100 per page)."""
    items: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        params: dict[str, Any] = {"order": "asc", "limit": 100}
        if after is not None:
            params["after"] = after
        r = c.get(f"/responses/{rid}/input_items", params=params)
        assert r.status_code == 200, r.text
        page = r.json()
        assert page["object"] == "list" and len(page["data"]) <= 100
        if page["data"]:
            assert page["first_id"] == page["data"][0]["id"] and page["last_id"] == page["data"][-1]["id"]
        items.extend(page["data"])
        if not page["has_more"]:
            return items
        assert len(page["data"]) == 100
        after = page["last_id"]


class _LivenessProbe:
    """Polls /liveness in a thread; records the time of every answer."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.answers: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=60) as c:
            while not self._stop.is_set():
                if c.get("/liveness").status_code == 200:
                    self.answers.append(time.monotonic())
                time.sleep(0.02)

    def __enter__(self) -> _LivenessProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


def test_large_input_is_stored_and_listed(server: ServerProcess) -> None:
    # Above every large-input path: parsed in a thread (256 KB), encoded in a thread (500
    # items), PostgreSQL's JSON creation (1000), SQLite's raised page cache (5000).
    n = 20_000
    raw = _body(n)
    assert 300_000 < len(raw) < 16 * 1024 * 1024
    with httpx.Client(base_url=server.base_url, timeout=300) as c, _LivenessProbe(server.base_url) as probe:
        started = time.monotonic()
        r = _post(c, raw)
        finished = time.monotonic()
        assert r.status_code == 200, r.text[:2000]
        body = r.json()
        assert body["status"] == "completed", body
        assert body["output"][0]["content"][0]["text"] == "the last one"
        # The server answered /liveness while it was taking in and running the large request.
        assert any(started < t < finished for t in probe.answers), (started, finished, probe.answers[-5:])

        rid = body["id"]
        items = _all_items(c, rid)
        assert len(items) == n
        for i, item in enumerate(items):
            assert item == _stored(i, n, rid), (i, item)

        # Newest first, and paging backwards from the middle.
        page = c.get(f"/responses/{rid}/input_items", params={"order": "desc", "limit": 3}).json()
        assert [it["id"] for it in page["data"]] == [
            items[n - 1]["id"],
            items[n - 2]["id"],
            items[n - 3]["id"],
        ]
        assert page["has_more"] is True
        middle = items[n // 2]["id"]
        page = c.get(
            f"/responses/{rid}/input_items", params={"order": "asc", "limit": 2, "before": middle}
        ).json()
        assert page["data"] == items[n // 2 - 2 : n // 2]

        # The stored request reads back (the Response of a large request).
        again = c.get(f"/responses/{rid}")
        assert again.status_code == 200 and again.json()["status"] == "completed"


def test_large_body_errors_match_small_ones(server: ServerProcess) -> None:
    """A body parsed off the event loop is refused exactly as the same error in a small body."""
    n = 20_000
    with httpx.Client(base_url=server.base_url, timeout=120) as c:
        for bad, param in (
            ({"role": "robot", "content": "x"}, "input[{pos}].role"),
            ({"type": "message", "role": "user", "content": "x", "extra": 1}, "input[{pos}].extra"),
            (
                {"type": "function_call", "call_id": "c", "name": "bad name!", "arguments": "{}"},
                "input[{pos}].name",
            ),
            ({"type": "nonsense"}, "input[{pos}].type"),
        ):
            small = {"model": "m", "input": [{"role": "user", "content": "hi"}, bad]}
            large = {"model": "m", "input": [{"role": "user", "content": "hi"}] * (n - 1) + [bad]}
            small_err = assert_error_shape(c.post("/responses", json=small), 400)
            large_err = assert_error_shape(_post(c, json.dumps(large).encode()), 400)
            assert small_err["param"] == param.format(pos=1), small_err
            assert large_err["param"] == param.format(pos=n - 1), large_err
            assert large_err["message"] == small_err["message"].replace("input[1]", f"input[{n - 1}]")
            assert large_err["code"] == small_err["code"]

        # Invalid JSON, and a lone surrogate, in a large body.
        truncated = _body(n)[:-2]
        err = assert_error_shape(_post(c, truncated), 400)
        assert err["code"] == "invalid_json"
        surrogate = _body(n).replace(b'"hello 0"', b'"\\ud800"', 1)
        assert surrogate != _body(n)
        err = assert_error_shape(_post(c, surrogate), 400)
        assert err["code"] == "invalid_json"

        # An unknown call id is caught after parsing, as in a small body.
        orphan = {"model": "m", "input": [{"role": "user", "content": "hi"}] * n}
        orphan["input"] = [
            *orphan["input"],
            {"type": "function_call_output", "call_id": "nope", "output": "x"},
        ]
        err = assert_error_shape(_post(c, json.dumps(orphan).encode()), 400)
        assert err["code"] == "unknown_call_id"


def test_large_body_with_chosen_id_is_idempotent(server: ServerProcess) -> None:
    """Retrying a large request under its client-chosen id returns the same response; another
    body under that id is a conflict (the request hash is computed off the event loop)."""
    n = 4_000
    raw = _body(n, background=True)
    assert len(raw) > 256 * 1024  # parsed in a worker thread, as the 100,000-item bodies are
    rid = "caresp_large_inputs_idempotent"
    headers = {"x-agent-response-id": rid}
    with httpx.Client(base_url=server.base_url, timeout=120) as c:
        first = _post(c, raw, headers)
        assert first.status_code == 200, first.text[:2000]
        assert first.json()["id"] == rid
        retry = _post(c, raw, headers)
        assert retry.status_code == 200, retry.text[:2000]
        assert retry.json()["id"] == rid
        other = _post(c, _body(n + 1, background=True), headers)
        assert_error_shape(other, 409)

        assert wait_status(server, rid, timeout=120)["status"] == "completed"
        items = _all_items(c, rid)
        assert items == [_stored(i, n, rid) for i in range(n)]
