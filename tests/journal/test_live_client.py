"""A live client reading across `kill -9` sees no `incomplete` item for a model call that had
finished before the kill (issue 37): the re-run replays that call from the journal and the item
the client was reading goes on as the same item.

App (tests/journal/apps.py `shop_fanout`): an intake agent, then a talker (no tool) and the
cashier (`send_receipt`, held by the hold file) in one superstep. The client streams the
background response (live delivery); the server is killed with SIGKILL once the talker's reply
was streamed and its call recorded (read from the database) while the cashier's tool still runs,
so the superstep's checkpoint is not committed and the talker's item is still open. A new server
on the same database finishes the response; the client reads on from the last event it saw.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_responses.testing import FakeModel
from tests.support.servers import ServerProcess
from tests.support.sse import check_sequence, iter_frames, stream_events

pytestmark = pytest.mark.crash


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _recorded(database_url: str, rid: str) -> set[tuple[str, str]]:
    """(executor, place) of the response's committed journal records."""
    query = "SELECT executor, place FROM journal WHERE response_id = "
    if database_url.startswith("sqlite"):
        con = sqlite3.connect(f"file:{database_url.split('sqlite:///', 1)[1]}?mode=ro", uri=True, timeout=5)
        try:
            return {(r[0], r[1]) for r in con.execute(query + "?", (rid,))}
        finally:
            con.close()
    import asyncpg  # type: ignore[import-untyped]

    async def read() -> set[tuple[str, str]]:
        conn = await asyncpg.connect(database_url.replace("postgresql://", "postgres://"))
        try:
            return {(r[0], r[1]) for r in await conn.fetch(query + "$1", rid)}
        finally:
            await conn.close()

    return asyncio.run(read())


class Reader:
    """A background response created with `stream=true`, read in a thread until the server dies."""

    def __init__(self, base_url: str, body: dict[str, Any]) -> None:
        self.events: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._read, args=(base_url, body), daemon=True)
        self._thread.start()

    def _read(self, base_url: str, body: dict[str, Any]) -> None:
        try:
            with httpx.stream("POST", f"{base_url}/v1/responses", json=body, timeout=60) as r:
                for f in iter_frames(r.iter_lines()):
                    if f.json is not None:
                        self.events.append(f.json)
        except (httpx.HTTPError, ValueError):
            pass  # the server was killed mid-stream

    def join(self) -> None:
        self._thread.join(30)


def test_a_replayed_model_call_continues_the_item_the_client_saw(database_url: str, tmp_path: Path) -> None:
    log, hold = tmp_path / "tools.jsonl", tmp_path / "hold"
    hold.touch()
    with FakeModel() as fake:
        env = {
            **fake.env("chat"),
            "JOURNAL_TOOL_LOG": str(log),
            "JOURNAL_TOOL_HOLD": str(hold),
            "DURABLE_RESPONSES_LEASE_SECONDS": "5",
        }

        def server(life: str) -> ServerProcess:
            return ServerProcess(
                database_url=database_url,
                app="tests.journal.apps:shop_fanout",
                workdir=tmp_path / life,
                env=env,
                delivery="live",
            ).start()

        first = server("a")
        try:
            body = {"model": "m", "input": "send_receipt order_id=Q1Z", "background": True, "stream": True}
            reader = Reader(first.base_url, body)
            _wait(lambda: bool(reader.events), 30, "response.created")
            rid = reader.events[0]["response"]["id"]

            def talker_recorded_and_tool_running() -> bool:
                shown = "".join(
                    e.get("delta", "") for e in reader.events if e["type"] == "response.output_text.delta"
                )
                return (
                    "talker:" in shown
                    and log.exists()
                    and ("talker", "model:1") in _recorded(database_url, rid)
                )

            _wait(talker_recorded_and_tool_running, 60, "the talker's recorded reply while the tool runs")
            first.kill()
        finally:
            first.kill()
        reader.join()
        hold.unlink()
        before = list(reader.events)
        talker_items = [
            e["item"]["id"]
            for e in before
            if e["type"] == "response.output_item.added" and e["item"]["type"] == "message"
        ]
        assert before[-1]["type"] not in ("response.completed", "response.failed")
        second = server("b")
        try:
            client = second.client()
            _wait(lambda: client.responses.retrieve(rid).status == "completed", 60, "the recovered response")
            after = stream_events(second.base_url, rid, after=before[-1]["sequence_number"])
            full = stream_events(second.base_url, rid)
            final = client.responses.retrieve(rid)
        finally:
            second.kill()
    check_sequence(full, label=rid)
    assert before + after == full
    incomplete = [
        e["item"]["id"]
        for e in full
        if e["type"] == "response.output_item.done" and e["item"]["status"] == "incomplete"
    ]
    assert incomplete == [], f"items closed incomplete: {incomplete} (items the client saw: {talker_items})"
    texts = [c.text for i in final.output if i.type == "message" for c in i.content]
    assert sum(t.startswith("talker:") for t in texts) == 1, texts
    talker_item = next(
        i for i in final.output if i.type == "message" and i.content[0].text.startswith("talker:")
    )
    assert talker_item.id in talker_items, "the talker's item is not the one the client was reading"
    shown = "".join(
        e.get("delta", "")
        for e in full
        if e["type"] == "response.output_text.delta" and e["item_id"] == talker_item.id
    )
    assert shown == talker_item.content[0].text, "the talker's text was streamed more than once"
    assert (
        sum(
            1
            for e in json.loads(json.dumps(full))
            if e["type"] == "response.output_item.added" and e["item"]["id"] == talker_item.id
        )
        == 1
    )
