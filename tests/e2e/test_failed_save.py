"""Checkpoints that cannot be saved: the framework logs and ignores a failing `save()`, the host
does not. On both dialects, in-process (no process has to die):

- a checkpoint commit the database refuses (its table renamed away, or a trigger) stops the
  run, and nothing the workflow did after the last paired checkpoint reaches the response;
  once the database takes writes again, recovery resumes it from that checkpoint and every
  output arrives exactly once (the response ends `completed`);
- recovery gives up on a response it took over more than `DURABLE_RESPONSES_MAX_RECOVERIES`
  times (it ends `failed`, saying so), so a write that always fails cannot loop forever;
- a checkpoint that cannot be encoded ends the response `failed`, saying why;
- a checkpoint holding a type off the allow-list is told in the log as it is saved, and refused
  (422) when a continuation restores it, until it is allowed;
- a continuation's reply survives a run stopped between its restore and the reply's delivery.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from durable_responses.runtime.run import restorability
from tests.support import db
from tests.support.inprocess import InProcessServer
from tests.support.responses import dump, output_texts, read_jsonl, retrieve, wait_status
from tests.support.sse import check_sequence, stream_events
from tests.support.waits import wait_until

Factory = Callable[..., InProcessServer]


def _ticks(response: dict[str, Any]) -> list[str]:
    return output_texts(response)


def _output_ids(srv: InProcessServer, rid: str) -> list[str]:
    return [item["id"] for item in retrieve(srv, rid)["output"]]


def test_refused_checkpoint_commit_stops_the_run_and_recovery_resumes_the_paired_checkpoint(
    database_url: str, inproc_factory: Factory
) -> None:
    srv = inproc_factory(database_url, "durable_responses.examples.countdown:countdown")
    client = srv.client()
    bg = client.responses.create(model="m", input="12 delay=0.3", background=True)
    wait_until(lambda: len(retrieve(srv, bg.id)["output"]) >= 2, 20)
    db.execute(database_url, "ALTER TABLE checkpoints RENAME TO checkpoints_broken")
    try:
        # The next checkpoint commit fails (with the outputs it would have paired): the run stops.
        wait_until(lambda: "could not commit" in srv.log(), 20, message=srv.log)
        stalled = retrieve(srv, bg.id)
        assert stalled["status"] == "in_progress"
        kept = [item["id"] for item in stalled["output"]]

        # While the table is gone, recovery claims the response again and again and each
        # attempt fails (it cannot read the checkpoints, or stops at its first save): wait for
        # two attempts, after which no output may have reached the response.
        def attempts() -> int:
            return srv.log().count(f"could not recover response {bg.id}")

        before = attempts()
        wait_until(
            lambda: attempts() >= before + 2, 30, message=lambda: f"two recovery attempts: {srv.log()}"
        )
        assert _output_ids(srv, bg.id) == kept
        assert retrieve(srv, bg.id)["status"] == "in_progress"
    finally:
        db.execute(database_url, "ALTER TABLE checkpoints_broken RENAME TO checkpoints")
    # Once the database takes writes again, recovery resumes from the newest *paired* checkpoint.
    r = wait_status(srv, bg.id, timeout=60)
    assert r["status"] == "completed", (r["error"], srv.log())
    # Every tick exactly once, in order; the outputs from before the failure are the same items.
    assert _ticks(r) == [f"tick {n}" for n in range(12, -1, -1)]
    assert [item["id"] for item in r["output"]][: len(kept)] == kept
    check_sequence(stream_events(srv.base_url, bg.id), label=bg.id)


def test_checkpoint_with_a_type_off_the_allow_list_fails_closed(
    database_url: str, inproc_factory: Factory
) -> None:
    app = "tests.apps.workflows:custom_state"
    restorability.forget()  # each refused type is told once per process
    srv = inproc_factory(database_url, app)
    client = srv.client()
    first = client.responses.create(model="m", input="go")
    assert first.status == "completed" and first.output_text == "state 42"
    # Its first checkpoint holding the type already said so (and what admits it), once.
    second = client.responses.create(model="m", input="go")
    told = [line for line in srv.log().splitlines() if "tests.apps.workflows:CustomState" in line]
    assert len(told) == 1 and f"response {first.id}" in told[0], srv.log()
    assert "cannot be recovered" in told[0] and "--allow-checkpoint-type" in told[0], told
    assert "register_checkpoint_type(CustomState)" in told[0], told
    assert second.status == "completed"
    # Continuing restores the checkpoint, which holds an app type nobody allowed: refused.
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.responses.create(model="m", input="again", previous_response_id=first.id)
    error = refused.value.response.json()["error"]
    assert error["code"] == "checkpoint_type_refused", error
    assert "tests.apps.workflows:CustomState" in error["message"]
    assert "DURABLE_RESPONSES_CHECKPOINT_TYPES" in error["message"]
    srv.stop()
    allowed = inproc_factory(
        database_url, app, env={"DURABLE_RESPONSES_CHECKPOINT_TYPES": "tests.apps.workflows:CustomState"}
    )
    ok = allowed.client().responses.create(model="m", input="again", previous_response_id=first.id)
    assert ok.status == "completed", ok.error
    assert ok.output_text == "state 42"
    assert "allow-list refuses" not in allowed.log(), allowed.log()


def test_a_checkpoint_that_cannot_be_encoded_ends_the_response_failed(
    database_url: str, inproc_factory: Factory
) -> None:
    """The second checkpoint holds a lambda, which cannot be pickled: the response ends `failed`,
    its error names the checkpoint, and the output the checkpoint would have paired is left out."""
    srv = inproc_factory(database_url, "tests.apps.workflows:unencodable_checkpoint")
    client = srv.client()
    foreground = dump(client.responses.create(model="m", input="go"))
    background = client.responses.create(model="m", input="go", background=True)
    for final in (foreground, wait_status(srv, background.id, timeout=30)):
        assert final["status"] == "failed", final
        message = final["error"]["message"]
        assert "checkpoint could not be saved" in message and "pickle" in message, message
        assert output_texts(final) == ["saved"], final
        events = stream_events(srv.base_url, final["id"])
        check_sequence(events, label=final["id"])
        assert events[-1]["type"] == "response.failed"
        # The output the failed checkpoint would have paired is closed incomplete (live delivery
        # sent it before the save failed).
        dropped = [
            e["item"]
            for e in events
            if e["type"] == "response.output_item.done" and "never checkpointed" in str(e["item"])
        ]
        assert [item["status"] for item in dropped] == ["incomplete"], dropped
    # Not left to recovery: the failed end is final (a sweep later it is still the same).
    before = stream_events(srv.base_url, background.id)
    time.sleep(1.0)  # two recovery sweeps
    assert stream_events(srv.base_url, background.id) == before


# region refused writes of one response


def _refuse_checkpoints_after_the_first(database_url: str, response_id: str) -> None:
    """Make the database refuse every checkpoint of `response_id` after its first."""
    rid = db.quote(response_id)
    if database_url.startswith("sqlite"):
        db.execute(
            database_url,
            f"CREATE TRIGGER inject_failure BEFORE INSERT ON checkpoints WHEN NEW.response_id = {rid} "
            f"AND (SELECT count(*) FROM checkpoints WHERE response_id = {rid}) >= 1 "
            "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
        )
        return
    db.execute(
        database_url,
        "CREATE FUNCTION inject_failure() RETURNS trigger AS $$ BEGIN "
        f"IF NEW.response_id = {rid} AND "
        f"(SELECT count(*) FROM checkpoints WHERE response_id = {rid}) >= 1 THEN "
        "RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
    )
    db.execute(
        database_url,
        "CREATE TRIGGER inject_failure BEFORE INSERT ON checkpoints FOR EACH ROW EXECUTE FUNCTION inject_failure()",
    )


def _heal(database_url: str) -> None:
    if database_url.startswith("sqlite"):
        db.execute(database_url, "DROP TRIGGER IF EXISTS inject_failure")
    else:
        db.execute(database_url, "DROP TRIGGER IF EXISTS inject_failure ON checkpoints")
        db.execute(database_url, "DROP FUNCTION IF EXISTS inject_failure()")


@pytest.fixture
def refuse_checkpoints(database_url: str) -> Iterator[Callable[[str], None]]:
    """`refuse(response_id)`: the database refuses that response's checkpoints after its first
    (until the test ends, or it calls `heal`)."""
    yield lambda rid: _refuse_checkpoints_after_the_first(database_url, rid)
    _heal(database_url)


def test_recovery_gives_up_after_max_recoveries(
    database_url: str,
    inproc_factory: Factory,
    refuse_checkpoints: Callable[[str], None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every save after the first is refused: the run stops, recovery resumes it, it stops
    again... With DURABLE_RESPONSES_MAX_RECOVERIES=2, the third takeover ends it `failed`."""
    record = tmp_path / "calls.jsonl"
    monkeypatch.setenv("RECORD_RUN_CALLS", str(record))
    srv = inproc_factory(
        database_url,
        "tests.apps.workflows:recording_countdown",
        env={"DURABLE_RESPONSES_MAX_RECOVERIES": "2"},
    )
    rid = f"resp_{uuid.uuid4().hex}"
    refuse_checkpoints(rid)
    srv.client().responses.create(
        model="m", input="3 delay=0.05", background=True, extra_headers={"x-agent-response-id": rid}
    )
    final = wait_status(srv, rid, timeout=30)
    assert final["status"] == "failed", (final, srv.log())
    message = final["error"]["message"]
    assert "taken over by recovery 3 times without finishing (limit 2)" in message, message
    # The first run and exactly two recoveries (each from the one checkpoint that committed);
    # none after the cap.
    calls = read_jsonl(record)
    assert len(calls) == 3, calls
    assert calls[0]["checkpoint_id"] is None
    assert calls[1]["checkpoint_id"] and calls[1]["checkpoint_id"] == calls[2]["checkpoint_id"], calls
    assert db.scalar(database_url, f"SELECT recovery_count FROM responses WHERE id = {db.quote(rid)}") == 3
    check_sequence(stream_events(srv.base_url, rid), label=rid)


def test_a_reply_is_not_lost_when_the_run_stops_between_restore_and_delivery(
    database_url: str, inproc_factory: Factory
) -> None:
    """Regression: a continuation's run restores the checkpoint it continues, saves one more
    (C'), and only then delivers the reply (C'' holds it). Stopped in between, recovery resumed
    from C' with no input: the reply was lost and the workflow asked its question again, the
    response `completed`. Reported with kill -9 (window widened by a slow trigger) and with a
    refused write; the refused write is deterministic, so it is the one pinned here."""
    srv = inproc_factory(
        database_url,
        "durable_responses.examples.approval:approval",
        env={"DURABLE_RESPONSES_RECOVERY_INTERVAL": "2"},
    )
    client = srv.client()
    turn1 = client.responses.create(model="m", input="Deploy to production")
    call_id = next(i.call_id for i in turn1.output if i.type == "function_call")
    rid = f"resp_{uuid.uuid4().hex}"
    _refuse_checkpoints_after_the_first(database_url, rid)
    try:
        client.responses.create(
            model="m",
            input=[{"type": "function_call_output", "call_id": call_id, "output": "approve"}],
            previous_response_id=turn1.id,
            background=True,
            extra_headers={"x-agent-response-id": rid},
        )
        wait_until(lambda: "could not commit" in srv.log(), 20, message=srv.log)
    finally:
        _heal(database_url)
    r = wait_status(srv, rid, timeout=60)
    assert r["status"] == "completed", (r["error"], srv.log())
    assert output_texts(r) == ["Completed with decision: approve"]
    assert not [i for i in r["output"] if i["type"] == "function_call"], "the question was asked again"


# endregion
