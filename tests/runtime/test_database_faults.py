"""Issue 15 at the HTTP surface: a database that cannot be used is a 503 with `Retry-After` and
`x-should-retry: true` on every route, `/readiness` fails, an open SSE stream ends cleanly,
and the server logs the condition, never a traceback per request."""

from __future__ import annotations

import gc
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_responses.store import DatabaseUnavailable, Unavailable
from tests.support.inprocess import InProcessServer
from tests.support.sse import iter_frames, parse_sse
from tests.support.waits import wait_until

COUNTDOWN = "durable_responses.examples.countdown:countdown"


def _down(*_a: Any, **_k: Any) -> Any:
    raise DatabaseUnavailable(Unavailable.UNREACHABLE, "ConnectionRefusedError: [Errno 111] refused")


def _assert_503(r: httpx.Response) -> None:
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.headers["retry-after"] == "1"
    assert r.headers["x-should-retry"] == "true"
    body = r.json()["error"]
    assert body["code"] == "database_unavailable" and "database" in body["message"], body


def test_every_route_answers_503_with_retry_after_while_the_database_is_down(tmp_path: Path) -> None:
    with InProcessServer(f"sqlite:///{tmp_path / 'f.db'}") as srv:
        base = srv.base_url
        r = httpx.post(f"{base}/v1/responses", json={"model": "m", "input": "hi", "background": True})
        assert r.status_code == 200
        rid = r.json()["id"]
        assert srv.service is not None
        store: Any = srv.service.host.store
        broken = {
            name: getattr(store, name)
            for name in (
                "get_response",
                "response_with_output",
                "ping",
                "insert_response",
                "read_events",
                "list_conversation_items",
            )
            if hasattr(store, name)
        }
        for name in broken:
            setattr(store, name, _down)
        try:
            _assert_503(httpx.post(f"{base}/v1/responses", json={"model": "m", "input": "x"}))
            _assert_503(httpx.get(f"{base}/v1/responses/{rid}"))
            _assert_503(httpx.get(f"{base}/v1/responses/{rid}", params={"stream": "true"}))
            _assert_503(httpx.post(f"{base}/v1/responses/{rid}/cancel"))
            _assert_503(httpx.delete(f"{base}/v1/responses/{rid}"))
            _assert_503(httpx.get(f"{base}/v1/responses/{rid}/input_items"))
            ready = httpx.get(f"{base}/readiness")
            assert ready.status_code == 503 and "unreachable" in ready.json()["reason"]
        finally:
            for name, fn in broken.items():
                setattr(store, name, fn)
        assert httpx.get(f"{base}/readiness").status_code == 200
        assert "Traceback" not in srv.log() and "unhandled error" not in srv.log(), srv.log()


def test_an_open_stream_ends_cleanly_on_a_store_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The relay's read fails: the SSE body ends normally (no broken chunked encoding), the
    client resumes later with Last-Event-ID and gets the rest, nothing twice; nothing is left
    for asyncio to complain about (a never-retrieved task, an async generator closed late)."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    with InProcessServer(f"sqlite:///{tmp_path / 's.db'}", COUNTDOWN) as srv:
        base = srv.base_url
        assert srv.service is not None
        store: Any = srv.service.host.store
        body = {"model": "c", "input": "12 delay=0.05", "background": True, "stream": True}
        seen: list[int] = []
        with httpx.stream("POST", f"{base}/v1/responses", json=body, timeout=30) as s:
            for frame in iter_frames(s.iter_lines()):  # ends without an exception: a clean end
                if frame.id is not None:
                    seen.append(int(frame.id))
                    if len(seen) == 4:
                        store.notifier.tail_after = lambda *_a: None  # every batch is read
                        store.read_events = _down
        assert 4 <= len(seen) and seen == sorted(seen)
        del store.notifier.tail_after, store.read_events  # the instance attributes: the methods again
        rid = None
        for _ in range(200):
            listed = httpx.get(f"{base}/v1/admin/responses", params={"limit": 5}).json()["data"]
            if listed and listed[0]["status"] == "completed":
                rid = listed[0]["id"]
                break
            time.sleep(0.05)
        assert rid is not None
        rest = httpx.get(
            f"{base}/v1/responses/{rid}", params={"stream": "true"}, headers={"last-event-id": str(seen[-1])}
        )
        frames = parse_sse(rest.text)
        ids = [int(f.id) for f in frames if f.id is not None]
        assert ids == list(range(seen[-1] + 1, ids[-1] + 1)), ids
        assert frames[-1].event == "response.completed", frames[-1]
        assert "Traceback" not in srv.log() and "Exception in ASGI" not in srv.log(), srv.log()
        gc.collect()
        time.sleep(0.2)
    assert not [r for r in caplog.records if r.name == "asyncio"], caplog.text


def test_statement_errors_name_no_client_value_and_a_cut_body_is_no_error(tmp_path: Path) -> None:
    """Issue 39: a statement's error (logged with SQLAlchemy's `[parameters: ...]`) carries no
    value a client sent, and a client that disconnects mid-body is not an ERROR."""
    import socket

    from sqlalchemy import text

    with InProcessServer(f"sqlite:///{tmp_path / 'f.db'}") as srv:
        assert srv.service is not None
        store: Any = srv.service.host.store

        async def failing() -> str:
            async with store.db.reader.connect() as conn:
                try:
                    await conn.execute(text("INSERT INTO nowhere VALUES (:v)"), {"v": "client-secret-value"})
                except Exception as exc:
                    return str(exc)
            return ""

        message = srv.run_in_loop(failing)
        assert "nowhere" in message and "client-secret-value" not in message, message

        records: list[logging.LogRecord] = []
        handler = logging.Handler(logging.DEBUG)
        handler.emit = records.append  # type: ignore[method-assign]
        http_log = logging.getLogger("durable_responses.http")
        level = http_log.level
        http_log.setLevel(logging.DEBUG)  # every record reaches the handler, INFO included
        http_log.addHandler(handler)
        try:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
                sock.sendall(
                    b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                    b'content-length: 1000\r\n\r\n{"input": '
                )
            # The server has read the cut body to its end (the socket closed): it says so at INFO.
            wait_until(
                lambda: any("client disconnected mid-body" in r.getMessage() for r in records),
                10,
                message=lambda: str([r.getMessage() for r in records]),
            )
            assert httpx.get(f"{srv.base_url}/readiness").status_code == 200
        finally:
            http_log.removeHandler(handler)
            http_log.setLevel(level)
        assert not [r for r in records if r.levelno >= logging.ERROR], [r.getMessage() for r in records]
