"""An approved tool runs once across `kill -9` after the approval (issue 37).

The approval apps of tests/agents/apps.py (modelled on agent-framework's
`function_tool_with_approval` and `sequential_builder_tool_approval` samples): a plain agent and a
Sequential whose last agent's `refund_payment` needs approval. The approval is answered as a
background response; the server (a subprocess) is killed with SIGKILL once the approved tool ran
and the model call that reads its result is in flight; a new server on the same database
finishes the response. The tool (which logs each run to a file) ran exactly once, and its result
reached the model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from durable_responses.testing import FakeModel
from tests.agents import apps
from tests.agents.hosted import approval_answer
from tests.support.servers import ServerProcess

pytestmark = pytest.mark.crash

CASES = {"agent": ("approval_agent", "cashier"), "sequential": ("sequential_approval", "cashier")}


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def _runs(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("case", list(CASES))
def test_an_approved_tool_runs_once_across_kill_9(case: str, database_url: str, tmp_path: Path) -> None:
    app, agent = CASES[case]
    log = tmp_path / "tools.jsonl"
    with FakeModel() as fake:
        env = {**fake.env("chat"), apps.TOOL_LOG_ENV: str(log), "DURABLE_RESPONSES_LEASE_SECONDS": "5"}

        def server(life: str) -> ServerProcess:
            return ServerProcess(
                database_url=database_url, app=f"tests.agents.apps:{app}", workdir=tmp_path / life, env=env
            ).start()

        first = server("a")
        try:
            client = first.client()
            asked = client.responses.create(model="m", input="refund_payment order_id=A1 amount=5")
            assert asked.status == "completed" and asked.output[-1].type == "mcp_approval_request", (
                asked.output
            )
            request = asked.output[-1]
            fake.token_delay = 0.05  # the call after the tool lasts
            mark = fake.mark()
            answered = client.responses.create(
                model="m",
                previous_response_id=asked.id,
                input=approval_answer(request.id, True),
                background=True,
            )

            def reading_the_result() -> bool:
                return any(
                    not c.finished and c.prompt.turns and c.prompt.turns[-1].role == "tool"
                    for c in fake.calls[mark:]
                )

            _wait(reading_the_result, 60, "the model call after the approved tool")
            assert [r["tool"] for r in _runs(log)] == ["refund_payment"]
            first.kill()
        finally:
            first.kill()
        fake.token_delay = 0.0
        second = server("b")
        try:
            client = second.client()
            _wait(
                lambda: client.responses.retrieve(answered.id).status == "completed",
                60,
                "the recovered response",
            )
            final = client.responses.retrieve(answered.id)
        finally:
            second.kill()
    assert [r["tool"] for r in _runs(log)] == ["refund_payment"], "the approved tool ran again"
    assert final.output_text.endswith("Tool refund_payment returned: refunded 5.00 for order A1"), (
        final.output_text
    )
    assert [i.type for i in final.output].count("mcp_call") == 1, [i.type for i in final.output]
    assert all(c.agent == agent for c in fake.calls[mark:])
