"""A functional workflow (`@workflow` / `@step`) killed mid-run (`kill -9`) and restarted on the same
database (SQLite and PostgreSQL) resumes after its last finished step: finished steps do not run
again, the rest run once, and the return value is the response's one output (issue 36).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.responses import output_texts, wait_terminal
from tests.support.sse import check_sequence, stream_events
from tests.support.waits import wait_until

pytestmark = pytest.mark.crash

APP = "durable_responses.examples.functional:order_pipeline"


def test_a_functional_workflow_killed_mid_run_resumes_after_its_last_finished_step(
    server_factory: Any, database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "steps.log"
    env = {"FUNCTIONAL_STEP_DELAY_SECONDS": "0.8", "FUNCTIONAL_STEP_LOG": str(log)}
    first = server_factory(database_url, app=APP, env=env).start()
    created = first.client().responses.create(
        model="m", input='{"item": "tea", "quantity": 2}', background=True
    )

    def steps() -> list[str]:
        return log.read_text().split() if log.exists() else []

    wait_until(lambda: "check_stock" in steps(), timeout=30, message="check_stock did not run")
    first.kill()
    assert "book" not in steps(), steps()

    second = server_factory(database_url, app=APP, env=env).start()
    client = second.client()
    final = wait_terminal(client, created.id, timeout=60)
    assert final.status == "completed", (final.error, second.log())
    (text,) = output_texts(final)
    assert json.loads(text) == {
        "item": "tea",
        "quantity": 2,
        "total": 25.0,
        "approved": True,
        "booking": "BOOKED-tea-2",
    }
    ran = steps()
    assert ran.count("price") == 1, ran  # finished before the kill: answered from the checkpoint
    assert ran.count("book") == 1, ran
    assert ran.count("check_stock") in (1, 2), ran  # it was running (or just done) at the kill
    check_sequence(stream_events(second.base_url, created.id), label=created.id)


def test_a_functional_workflow_killed_while_taking_an_answer_finishes_with_that_answer(
    server_factory: Any, database_url: str, tmp_path: Path
) -> None:
    """The run that answers a functional workflow's pause is killed -9 in the step after the
    answer; the restarted server restores the pause again and delivers the stored answer."""
    log = tmp_path / "steps.log"
    env = {"FUNCTIONAL_STEP_DELAY_SECONDS": "0.8", "FUNCTIONAL_STEP_LOG": str(log)}
    first = server_factory(database_url, app=APP, env=env).start()
    client = first.client()
    paused = client.responses.create(model="m", input='{"item": "cake", "quantity": 3}', store=True)
    (call,) = [o for o in paused.output if o.type == "function_call"]

    def steps() -> list[str]:
        return log.read_text().split() if log.exists() else []

    answering = client.responses.create(
        model="m",
        previous_response_id=paused.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "false"}],
        background=True,
    )
    wait_until(lambda: "book" in steps(), timeout=30, message="book did not run")
    first.kill()

    second = server_factory(database_url, app=APP, env=env).start()
    final = wait_terminal(second.client(), answering.id, timeout=60)
    assert final.status == "completed", (final.error, second.log())
    texts = output_texts(final)
    assert len(texts) == 1, (texts, [item.type for item in final.output], second.log())
    receipt = json.loads(texts[0])
    assert receipt["approved"] is False and receipt["booking"] == "DECLINED-cake-3", receipt
    ran = steps()
    assert ran.count("price") == 1 and ran.count("check_stock") == 1, ran  # cached since the pause
    check_sequence(stream_events(second.base_url, answering.id), label=answering.id)
