"""Retention: finished responses older than the cutoff go with every row that is theirs; nothing
running, nothing awaiting input, and no turn a conversation still needs is touched. Rows are
aged by moving the purge's clock (no sleeping). `purge --dry-run` changes nothing; the
background sweeper deletes in small batches."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from durable_responses.protocol.sse import dumps
from durable_responses.store import EventRow, ResponseRow, Store
from durable_responses.store import _tables as t
from tests.support import db
from tests.support.inprocess import InProcessServer
from tests.support.servers import ROOT
from tests.support.waits import wait_until
from tests.surface.receiver import Receiver

APPROVAL = "durable_responses.examples.approval:approval"
DAY = 86400.0
BY_RESPONSE = (t.input_items, t.output_items, t.events, t.checkpoints, t.checkpoint_log, t.pending_requests)


def _create(base: str, **body: Any) -> dict[str, Any]:
    r = httpx.post(f"{base}/v1/responses", json={"model": "m", **body}, timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _answer(base: str, paused: dict[str, Any], **where: Any) -> dict[str, Any]:
    (call,) = [o["call_id"] for o in paused["output"] if o["type"] == "function_call"]
    return _create(base, input=[{"type": "function_call_output", "call_id": call, "output": "yes"}], **where)


async def _counts(url: str) -> dict[str, dict[str, int]]:
    """Rows per table per response id."""
    store = Store.open(url)
    try:
        out: dict[str, dict[str, int]] = {}
        async with store.db.reader.connect() as conn:
            for table in (*BY_RESPONSE, t.responses):
                col = table.c.id if table is t.responses else table.c.response_id
                rows = (await conn.execute(select(col, func.count()).group_by(col))).all()
                out[table.name] = {str(r[0]): int(r[1]) for r in rows}
        return out
    finally:
        await store.close()


async def _purge(url: str, older_than: float, *, ahead: float, dry_run: bool = False) -> Any:
    store = Store.open(url)
    store.retention.clock = lambda: time.time() + ahead
    try:
        return await store.retention.purge(older_than, dry_run=dry_run, batch=2)
    finally:
        await store.close()


async def _running(url: str, conversation: str | None = None) -> str:
    """A response some replica is running now (its lease far ahead: no recovery takes it),
    optionally a turn of `conversation`."""
    store = Store.open(url)
    now = time.time()
    row = ResponseRow(
        id="resp_running0000000000000000000000000000000000000",
        user_id="",
        status="in_progress",
        background=True,
        stream=False,
        delivery="live",
        created_at=now,
        completed_at=None,
        previous_response_id=None,
        conversation_id=conversation,
        request=dumps({"model": "m", "input": "x", "background": True}),
        request_hash="x",
        lease_owner="elsewhere",
        lease_expires_at=now + 100 * DAY,
    )
    store.outbox.start()
    try:
        await store.insert_response(
            row, [], [EventRow(0, "response.created", dumps({"type": "response.created"}))]
        )
    finally:
        await store.close()
    return row.id


def test_old_rows_go_and_nothing_in_use_is_touched(database_url: str, tmp_path: Path) -> None:
    with InProcessServer(database_url, APPROVAL) as srv:
        base = srv.base_url
        done_pause = _create(base, input="approve the plan")
        done = _answer(base, done_pause, previous_response_id=done_pause["id"])
        assert done["status"] == "completed"
        waiting = _create(base, input="still waiting")
        conv = httpx.post(f"{base}/v1/conversations", json={}, timeout=10).json()["id"]
        turn1 = _create(base, input="first turn", conversation=conv)
        turn2 = _answer(base, turn1, conversation=conv)
        turn3 = _create(base, input="third turn", conversation=conv)  # awaits input: keeps the rest
        running = asyncio.run(_running(database_url))
        gone = {done_pause["id"], done["id"]}
        kept = {waiting["id"], turn1["id"], turn2["id"], turn3["id"], running}

        before = asyncio.run(_counts(database_url))
        dry = asyncio.run(_purge(database_url, 30 * DAY, ahead=40 * DAY, dry_run=True))
        assert asyncio.run(_counts(database_url)) == before  # a dry run changes nothing
        assert dry.responses == 2
        fresh = asyncio.run(_purge(database_url, 30 * DAY, ahead=0))
        assert fresh.responses == 0  # nothing is 30 days old yet

        report = asyncio.run(_purge(database_url, 30 * DAY, ahead=40 * DAY))
        assert report.responses == 2 and dict(report.rows) == dict(dry.rows)
        after = asyncio.run(_counts(database_url))
        for table, per_response in after.items():
            assert not gone & set(per_response), (table, per_response)
            for rid in kept:
                assert per_response.get(rid) == before[table].get(rid), (table, rid)
        assert report.rows["events"] == sum(before["events"][r] for r in gone)

        # What was kept still works: the paused ones continue, the conversation goes on.
        assert _answer(base, waiting, previous_response_id=waiting["id"])["status"] == "completed"
        assert _answer(base, turn3, conversation=conv)["status"] == "completed"
        items = httpx.get(f"{base}/v1/conversations/{conv}/items", params={"order": "asc"}).json()["data"]
        assert len(items) >= 6

        # Once nothing of the conversation is in use, it expires whole (and reads as deleted).
        later = asyncio.run(_purge(database_url, 30 * DAY, ahead=40 * DAY))
        assert later.responses == 6 and later.conversations == 1
        assert httpx.get(f"{base}/v1/conversations/{conv}").status_code == 404
        left = asyncio.run(_counts(database_url))
        assert set(left["responses"]) == {running}


def test_a_running_turn_keeps_its_conversation(database_url: str) -> None:
    """Every row is past the cutoff (the purge's clock 40 days ahead) and the conversation's
    first turn has ended; the only thing that keeps it is the conversation's other turn, still
    running. Once that one ends, the whole conversation expires."""
    with InProcessServer(database_url) as srv:
        base = srv.base_url
        conv = httpx.post(f"{base}/v1/conversations", json={}, timeout=10).json()["id"]
        first = _create(base, input="first turn", conversation=conv)
        assert first["status"] == "completed", first
        running = asyncio.run(_running(database_url, conversation=conv))

        kept = asyncio.run(_purge(database_url, 30 * DAY, ahead=40 * DAY))
        assert kept.responses == 0, (
            f"a turn of a conversation with a running turn was deleted: {kept.lines()}"
        )
        assert set(asyncio.run(_counts(database_url))["responses"]) == {first["id"], running}

        db.execute(
            database_url,
            "UPDATE responses SET status = 'completed', lease_owner = NULL, lease_expires_at = NULL"
            f" WHERE id = {db.quote(running)}",
        )
        gone = asyncio.run(_purge(database_url, 30 * DAY, ahead=40 * DAY))
        assert gone.responses == 2 and gone.conversations == 1, gone.lines()
        assert httpx.get(f"{base}/v1/conversations/{conv}", timeout=10).status_code == 404


def test_a_webhook_still_to_deliver_keeps_its_response(database_url: str) -> None:
    """A background response ended; its webhook's endpoint refuses (500) and the next attempt
    is a minute away: the delivery is `pending`, and retention keeps the response (and its
    webhook event) until the delivery has ended."""
    receiver = Receiver(fail_first=1_000_000).start()
    try:
        env = receiver.env(DURABLE_RESPONSES_WEBHOOK_RETRY_SECONDS="60")
        with InProcessServer(database_url, env=env) as srv:
            client = srv.client()
            rid = client.responses.create(model="m", input="hello", background=True).id
            wait_until(lambda: receiver.attempts >= 1, 30, message="the first webhook attempt")
            wait_until(
                lambda: (
                    db.query(
                        database_url,
                        "SELECT d.status, d.attempts FROM webhook_deliveries AS d JOIN webhook_events AS e"
                        f" ON d.event_id = e.id WHERE e.response_id = {db.quote(rid)}",
                    )
                    == [("pending", 1)]
                ),
                30,
                message="the failed attempt recorded, the delivery still pending",
            )
            assert client.responses.retrieve(rid).status == "completed"

            kept = asyncio.run(_purge(database_url, 30 * DAY, ahead=40 * DAY))
            assert kept.responses == 0, (
                f"a response with a webhook still to deliver was deleted: {kept.lines()}"
            )
            assert rid in asyncio.run(_counts(database_url))["responses"]

            db.execute(
                database_url,
                "UPDATE webhook_deliveries SET status = 'failed', lease_owner = NULL"
                f" WHERE event_id IN (SELECT id FROM webhook_events WHERE response_id = {db.quote(rid)})",
            )
            gone = asyncio.run(_purge(database_url, 30 * DAY, ahead=40 * DAY))
            assert gone.responses == 1 and gone.rows["webhook_events"] == 1, gone.lines()
    finally:
        receiver.stop()


def test_the_sweeper_deletes_in_small_batches(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    with InProcessServer(url) as srv:
        ids = [_create(srv.base_url, input=f"hello {i}")["id"] for i in range(5)]

    async def sweep() -> int:
        store = Store.open(url)
        store.retention.clock = lambda: time.time() + 2 * DAY
        store.retention.schedule(DAY, interval=0.02, batch=2)
        await store.start()
        try:
            for _ in range(200):
                async with store.db.reader.connect() as conn:
                    left = (await conn.execute(select(func.count()).select_from(t.responses))).scalar()
                if left == 0:
                    break
                await asyncio.sleep(0.02)
            return int(left or 0)
        finally:
            await store.close()

    assert len(ids) == 5 and asyncio.run(sweep()) == 0


def test_purge_command_dry_run_changes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with InProcessServer(url) as srv:
        for i in range(3):
            _create(srv.base_url, input=f"hello {i}")
    before = asyncio.run(_counts(url))

    def purge(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "durable_responses", "purge", "--database-url", url, *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,  # a cold interpreter's imports: ~30 s at load ~9 on two cores
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert "would delete 0 responses" in purge("--older-than", "30d", "--dry-run")
    dry = purge("--older-than", "0s", "--dry-run")
    assert "would delete 3 responses" in dry and "events:" in dry
    assert asyncio.run(_counts(url)) == before
    assert "deleted 3 responses" in purge("--older-than", "0s")
    assert asyncio.run(_counts(url))["responses"] == {}
