"""A response paused under one supported agent-framework release and answered under the other.

Two servers on the same database (SQLite and PostgreSQL), one in the oldest release's venv
(`make pytest` points DURABLE_RESPONSES_OLDEST_PYTHON at it) and one in this one (the newest):
an agent inside a handoff workflow asks for approval of its tool under the first; the answer sent
to the second is a 409 `app_version_mismatch` naming the framework change (the app's version
fingerprint includes the agent-framework-core release), and nothing is consumed; once the old
version is declared compatible (DURABLE_RESPONSES_COMPATIBLE_VERSIONS), the second restores the
first's checkpoint, the approved tool runs once and the agent answers. Both directions.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from durable_responses.testing import FakeModel
from tests.agents import apps
from tests.agents.hosted import approval_answer, fake
from tests.support.framework import AF_CORE, NEWEST, OLDEST
from tests.support.tools import missing

__all__ = ["fake"]  # fixture

OLDEST_PYTHON_ENV = "DURABLE_RESPONSES_OLDEST_PYTHON"
APP = "tests.agents.apps:handoff"


def _release_of(python: str) -> str:
    return subprocess.run(
        [python, "-c", "from importlib import metadata; print(metadata.version('agent-framework-core'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture(scope="module")
def oldest_python() -> str:
    path = os.environ.get(OLDEST_PYTHON_ENV)
    if not path:
        missing(f"{OLDEST_PYTHON_ENV} is not set (`make pytest` sets it to the oldest release's venv)")
    assert AF_CORE == NEWEST, f"this venv runs agent-framework-core {AF_CORE}, not the newest ({NEWEST})"
    assert _release_of(path) == OLDEST, f"{path} does not run agent-framework-core {OLDEST}"
    return path


@pytest.mark.crash
@pytest.mark.parametrize("direction", ["oldest-then-newest", "newest-then-oldest"])
def test_a_pause_answered_under_another_release_is_refused_then_continues_when_declared_compatible(
    direction: str,
    database_url: str,
    server_factory: Any,
    fake: FakeModel,
    oldest_python: str,
    tmp_path: Path,
) -> None:
    pausing, answering = (oldest_python, sys.executable)
    before, after = OLDEST, NEWEST
    if direction == "newest-then-oldest":
        pausing, answering, before, after = answering, pausing, after, before
    tool_log = tmp_path / "tools.jsonl"
    env = {**fake.env("responses"), apps.TOOL_LOG_ENV: str(tool_log)}

    first = server_factory(database_url, APP, env=env, python=pausing).start(timeout=120)
    asked = first.client().responses.create(
        model="fake-model", input="billing: refund_payment order_id=A1 amount=5"
    )
    assert asked.status == "completed" and asked.output[-1].type == "mcp_approval_request", asked.output
    request = asked.output[-1]
    first.kill()
    answer = approval_answer(request.id, True)

    second = server_factory(database_url, APP, env=env, python=answering).start(timeout=120)
    with pytest.raises(openai.ConflictError) as refused:
        second.client().responses.create(model="fake-model", previous_response_id=asked.id, input=answer)
    err = refused.value
    assert err.code == "app_version_mismatch", err.message
    assert f"framework '{before}' -> '{after}'" in err.message, err.message
    made_by = re.search(r"made by version (\S+) of", err.message)
    assert made_by is not None, err.message
    second.kill()
    assert not tool_log.exists()

    compatible = {**env, "DURABLE_RESPONSES_COMPATIBLE_VERSIONS": made_by.group(1)}
    third = server_factory(database_url, APP, env=compatible, python=answering).start(timeout=120)
    mark = fake.mark()
    answered = third.client().responses.create(
        model="fake-model", previous_response_id=asked.id, input=answer
    )
    assert answered.status == "completed", answered.error
    assert [i.type for i in answered.output] == ["mcp_call", "message"], answered.output
    assert answered.output[0].output == "refunded 5.00 for order A1"
    assert answered.output_text == "billing: Tool refund_payment returned: refunded 5.00 for order A1"
    assert [c.agent for c in fake.calls_since(mark)] == ["billing"]
    runs = [json.loads(line) for line in tool_log.read_text().splitlines()]
    assert [(r["tool"], r["pid"]) for r in runs] == [("refund_payment", third.proc.pid)]
