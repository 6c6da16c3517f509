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
