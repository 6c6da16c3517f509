"""A checkpoint that cannot be committed stops the run (the framework would swallow it).

Regression for the framework's behaviour (FACTS: a failing `save()` is logged and the run goes
on): the host must notice. We break the real database under a running workflow by renaming the
checkpoints table, and check that the response ends `failed`, says why, and that nothing the
workflow did after the failed save reached the outbox.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from typing import Any

import pytest

from tests.conftest import ServerProcess


def _sql(database_url: str, statement: str) -> None:
    if database_url.startswith("sqlite"):
        path = database_url.split("sqlite:///", 1)[1]
        con = sqlite3.connect(path, timeout=30)
        try:
            con.execute(statement)
            con.commit()
        finally:
            con.close()
        return
    import asyncpg  # type: ignore[import-untyped]

    async def run() -> None:
        conn = await asyncpg.connect(database_url.replace("postgresql://", "postgres://"))
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


@pytest.mark.crash
def test_failed_checkpoint_commit_stops_the_run_and_recovery_resumes_the_paired_checkpoint(
    database_url: str, server_factory: Any
) -> None:
    srv: ServerProcess = server_factory(database_url, "server.examples.countdown:countdown").start()
    client = srv.client()
    bg = client.responses.create(model="m", input="12 delay=0.3", background=True)
    deadline = time.monotonic() + 20
    while len(client.responses.retrieve(bg.id).output) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    _sql(database_url, "ALTER TABLE checkpoints RENAME TO checkpoints_broken")
    try:
        # The next checkpoint commit fails (with the outputs it would have paired): the run stops.
        time.sleep(2.0)
        stalled = client.responses.retrieve(bg.id)
        assert stalled.status == "in_progress"
        outputs_while_broken = len(stalled.output)
        time.sleep(1.0)
        assert len(client.responses.retrieve(bg.id).output) == outputs_while_broken  # nothing moves
    finally:
        _sql(database_url, "ALTER TABLE checkpoints_broken RENAME TO checkpoints")
    # Once the database takes writes again, recovery resumes from the newest *paired* checkpoint.
    deadline = time.monotonic() + 60
    while (r := client.responses.retrieve(bg.id)).status == "in_progress":
        assert time.monotonic() < deadline, srv.log()
        time.sleep(0.1)
    assert r.status == "completed", r.error
    ticks = [c.text for item in r.output for c in item.content]
    assert ticks == [f"tick {n}" for n in range(12, -1, -1)]  # every tick exactly once, in order
    events = list(client.responses.retrieve(bg.id, stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events].count("response.created") == 1
    assert [e.type for e in events].count("response.completed") == 1


@pytest.mark.crash
def test_checkpoint_with_a_type_off_the_allow_list_fails_closed(
    database_url: str, server_factory: Any
) -> None:
    import openai

    app = "tests.apps.workflows:custom_state"
    srv: ServerProcess = server_factory(database_url, app).start()
    client = srv.client()
    first = client.responses.create(model="m", input="go")
    assert first.status == "completed" and first.output_text == "state 42"
    # Continuing restores the checkpoint, which holds an app type nobody allowed: refused.
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.responses.create(model="m", input="again", previous_response_id=first.id)
    message = refused.value.response.json()["error"]["message"]
    assert "tests.apps.workflows:CustomState" in message
    assert "DURABLE_RESPONSES_CHECKPOINT_TYPES" in message
    srv.kill()
    allowed: ServerProcess = server_factory(
        database_url, app, env={"DURABLE_RESPONSES_CHECKPOINT_TYPES": "tests.apps.workflows:CustomState"}
    ).start()
    ok = allowed.client().responses.create(model="m", input="again", previous_response_id=first.id)
    assert ok.status == "completed", ok.error
    assert ok.output_text == "state 42"


def _fail_second_checkpoint_of(database_url: str, response_id: str) -> None:
    """Make the database refuse every checkpoint of `response_id` after its first."""
    if database_url.startswith("sqlite"):
        _sql(
            database_url,
            f"CREATE TRIGGER inject_failure BEFORE INSERT ON checkpoints WHEN NEW.response_id = '{response_id}' "
            f"AND (SELECT count(*) FROM checkpoints WHERE response_id = '{response_id}') >= 1 "
            "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
        )
        return
    _sql(
        database_url,
        "CREATE FUNCTION inject_failure() RETURNS trigger AS $$ BEGIN "
        f"IF NEW.response_id = '{response_id}' AND "
        f"(SELECT count(*) FROM checkpoints WHERE response_id = '{response_id}') >= 1 THEN "
        "RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
    )
    _sql(
        database_url,
        "CREATE TRIGGER inject_failure BEFORE INSERT ON checkpoints FOR EACH ROW EXECUTE FUNCTION inject_failure()",
    )


def _heal(database_url: str) -> None:
    if database_url.startswith("sqlite"):
        _sql(database_url, "DROP TRIGGER inject_failure")
    else:
        _sql(database_url, "DROP TRIGGER inject_failure ON checkpoints")
        _sql(database_url, "DROP FUNCTION inject_failure()")


@pytest.mark.crash
def test_a_reply_is_not_lost_when_the_run_stops_between_restore_and_delivery(
    database_url: str, server_factory: Any
) -> None:
    """Regression: a continuation's run restores the checkpoint it continues, saves one more
    (C'), and only then delivers the reply (C'' holds it). Stopped in between, recovery resumed
    from C' with no input: the reply was lost and the workflow asked its question again, the
    response `completed`. Reported with kill -9 (window widened by a slow trigger) and with a
    refused write; the refused write is deterministic, so it is the one pinned here."""
    srv: ServerProcess = server_factory(
        database_url,
        "server.examples.approval:approval",
        env={"DURABLE_RESPONSES_RECOVERY_INTERVAL": "2"},
    ).start()
    client = srv.client()
    turn1 = client.responses.create(model="m", input="Deploy to production")
    call_id = next(i.call_id for i in turn1.output if i.type == "function_call")
    rid = f"resp_{uuid.uuid4().hex}"
    _fail_second_checkpoint_of(database_url, rid)
    healed = False
    try:
        client.responses.create(
            model="m",
            input=[{"type": "function_call_output", "call_id": call_id, "output": "approve"}],
            previous_response_id=turn1.id,
            background=True,
            extra_headers={"x-agent-response-id": rid},
        )
        deadline = time.monotonic() + 20
        while "could not commit" not in srv.log():
            assert time.monotonic() < deadline, srv.log()
            time.sleep(0.02)
        _heal(database_url)
        healed = True
    finally:
        if not healed:
            _heal(database_url)
    deadline = time.monotonic() + 60
    while (r := client.responses.retrieve(rid)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, srv.log()
        time.sleep(0.1)
    assert r.status == "completed", (r.error, srv.log())
    assert [c.text for item in r.output if item.type == "message" for c in item.content] == [
        "Completed with decision: approve"
    ]
    assert not [i for i in r.output if i.type == "function_call"], "the question was asked again"
