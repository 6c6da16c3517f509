"""Webhooks for background responses: signed, committed with the end, delivered at least once.

A real receiver on loopback verifies every delivery with the openai SDK's `webhooks.unwrap`.
Covered: each kind of end (completed, cancelled, failed) and no webhook for a foreground
response; a receiver failing its first 3 attempts still gets the event; `kill -9` of the
server while its attempt is unanswered (after the terminal commit, before any delivery) still
delivers after a restart; two replicas deliver each event exactly once when nothing fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from durable_responses.store import Store
from tests.support.inprocess import InProcessServer
from tests.support.responses import wait_status, wait_terminal
from tests.support.waits import wait_for_value, wait_until

from .receiver import Receiver, wait_settled


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def _deliveries(database_url: str, rid: str) -> list[Any]:
    async def read() -> list[Any]:
        store = Store.open(database_url)
        try:
            return await store.webhooks.deliveries(response_id=rid)
        finally:
            await store.close()

    return asyncio.run(read())


def test_each_end_sends_its_signed_event(database_url: str, receiver: Receiver) -> None:
    with InProcessServer(
        database_url, "durable_responses.examples.countdown:countdown", env=receiver.env()
    ) as srv:
        client = srv.client()
        done = client.responses.create(model="any", input="2 delay=0", background=True)
        slow = client.responses.create(model="any", input="50 delay=0.2", background=True)
        wait_status(srv, slow.id, ["in_progress"])
        client.responses.cancel(slow.id)
        foreground = client.responses.create(model="any", input="1 delay=0")  # no webhook
        assert foreground.status == "completed"
        # The foreground end committed before its answer, without a webhook event: two in all.
        settled = wait_settled(database_url, 2)
        got = receiver.wait_for(2)
    assert sorted((rid, kind) for rid, kind, _s, _a in settled) == sorted(
        [(done.id, "response.completed"), (slow.id, "response.cancelled")]
    )
    by_response = {d.event.data.id: d for d in got}
    assert len(got) == 2 and set(by_response) == {done.id, slow.id}, [d.body for d in got]
    assert by_response[done.id].event.type == "response.completed"
    assert by_response[slow.id].event.type == "response.cancelled"
    for d in got:
        assert d.event.id.startswith("evt_") and d.webhook_id == d.event.id
        assert d.event.object == "event" and isinstance(d.event.created_at, int)
    assert not receiver.refused
    states = _deliveries(database_url, done.id)
    assert [(s.status, s.attempts) for s in states] == [("delivered", 1)]


def test_failed_response_and_a_receiver_failing_three_times(database_url: str) -> None:
    receiver = Receiver(fail_first=3).start()
    try:
        with InProcessServer(database_url, "tests.surface.apps:failing", env=receiver.env()) as srv:
            client = srv.client()
            r = client.responses.create(model="any", input="x", background=True)
            assert wait_terminal(client, r.id, 30).status == "failed"
            (d,) = receiver.wait_for(1)
        assert d.event.type == "response.failed" and d.event.data.id == r.id
        assert receiver.attempts == 4
        (state,) = _deliveries(database_url, r.id)
        assert state.status == "delivered" and state.attempts == 4 and state.last_error is None
    finally:
        receiver.stop()


def test_a_delivery_that_never_succeeds_ends_failed_and_says_so(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = Receiver(fail_first=1000).start()
    env = receiver.env(DURABLE_RESPONSES_WEBHOOK_MAX_ATTEMPTS="2")
    try:
        with InProcessServer(database_url, "durable_responses.examples.echo:echo", env=env) as srv:
            r = srv.client().responses.create(model="any", input="hi", background=True)
            (state,) = wait_for_value(
                lambda: _deliveries(database_url, r.id),
                lambda states: [s.status for s in states] == ["failed"],
                20,
                message="the delivery ended failed",
            )
            wait_until(
                lambda: any("failed for good after 2 attempts" in rec.getMessage() for rec in caplog.records),
                10,
                message="the error logged",
            )
        assert receiver.attempts == 2
        assert state.status == "failed" and state.attempts == 2 and state.last_error == "HTTP 500"
        assert any("failed for good after 2 attempts" in rec.getMessage() for rec in caplog.records)
    finally:
        receiver.stop()


@pytest.mark.crash
def test_kill_9_before_the_delivery_still_delivers_after_restart(
    database_url: str, server_factory: Any, tmp_path: Path
) -> None:
    receiver = Receiver(hold_first=True).start()
    env = receiver.env(DURABLE_RESPONSES_WEBHOOK_TIMEOUT_SECONDS="1")
    try:
        srv = server_factory(
            database_url, "durable_responses.examples.echo:echo", env=env, workdir=tmp_path / "w"
        ).start()
        r = srv.client().responses.create(model="any", input="survive", background=True)
        # The terminal event is committed and the first attempt is on the wire, unanswered.
        assert receiver.holding.wait(20)
        assert srv.client().responses.retrieve(r.id).status == "completed"
        srv.kill()
        receiver.release()
        again = server_factory(
            database_url, "durable_responses.examples.echo:echo", env=env, workdir=tmp_path / "w"
        )
        again.start()
        (d,) = receiver.wait_for(1, timeout=30)
        assert d.event.type == "response.completed" and d.event.data.id == r.id
        assert receiver.attempts == 2
    finally:
        receiver.stop()


def test_two_replicas_deliver_each_event_exactly_once(pg_database_url: str, receiver: Receiver) -> None:
    env = receiver.env()
    with (
        InProcessServer(pg_database_url, "durable_responses.examples.echo:echo", env=env) as a,
        InProcessServer(pg_database_url, "durable_responses.examples.echo:echo", env=env) as b,
    ):
        ids = []
        for i in range(10):
            client = (a if i % 2 else b).client()
            ids.append(client.responses.create(model="any", input=f"n{i}", background=True).id)
        settled = wait_settled(pg_database_url, 10)
        got = receiver.wait_for(10)
    # Each delivery was attempted once (a second replica's attempt would count) and none is
    # pending: nothing more can be sent.
    assert [(status, attempts) for _r, _t, status, attempts in settled] == [("delivered", 1)] * 10
    assert sorted(d.event.data.id for d in receiver.deliveries) == sorted(ids)
    assert len({d.webhook_id for d in receiver.deliveries}) == len(receiver.deliveries) == len(got) == 10
    assert receiver.attempts == 10 and not receiver.refused
