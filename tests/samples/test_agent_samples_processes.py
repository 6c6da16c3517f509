"""agent-framework's agent samples (tests/samples/test_agent_samples.py) on `durable-responses
serve` processes killed -9: a background turn of function_based_middleware's agent killed after
its tool ran, mid the model call that follows, and function_tool_with_approval_and_sessions'
approval left waiting, both taken up by a new process on a wiped working directory. The finished
tool is not run again (the journal replays its result, and its model call: the agent's own
function middleware, outside the journal's, sees the replayed call), the waiting one runs once
when approved, and each response completes once with a valid event sequence.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from durable_responses.testing import FakeModel
from tests.samples.model import model_env
from tests.samples.test_agent_samples import APPS, CALENDAR, WEATHER
from tests.support import db
from tests.support.responses import dump, output_texts, wait_terminal
from tests.support.servers import ServerProcess
from tests.support.sse import check_sequence, stream_events
from tests.support.waits import wait_until

SERVED = ",".join(f"{name}={APPS[name]}" for name in ("function_middleware", "approval_sessions"))
RAN = "[LoggingFunctionMiddleware] About to call function: get_weather."
EXECUTED = ">>> EXECUTING: add_to_calendar"


def _printed(srv: ServerProcess) -> str:
    """Everything the process printed (its stdout is line-buffered: single_agent_apps)."""
    return srv.log_path.read_text(errors="replace")


def _mcp_calls(resp: Any) -> list[dict[str, Any]]:
    return [o for o in dump(resp)["output"] if o["type"] == "mcp_call"]


@pytest.mark.crash
def test_agent_samples_killed_after_a_tool_ran_and_while_an_approval_waits_complete_once(
    server_factory: Any, database_url: str, fake: FakeModel
) -> None:
    env = model_env(fake)
    first = server_factory(database_url, app=SERVED, env=env).start()
    client = first.client()
    paused = client.responses.create(model="approval_sessions", input=CALENDAR, store=True)
    (request,) = [o for o in dump(paused)["output"] if o["type"] == "mcp_approval_request"]

    fake.token_delay = 0.15  # the reply after the tool's result streams for seconds
    try:
        mark = fake.mark()
        created = client.responses.create(model="function_middleware", input=WEATHER, background=True)
        wait_until(
            lambda: len(fake.calls_since(mark)) >= 2 and _mcp_calls(client.responses.retrieve(created.id)),
            timeout=30,
            message="the tool's mcp_call was never committed",
        )
        (before,) = _mcp_calls(client.responses.retrieve(created.id))
        first.kill()
        status = db.scalar(database_url, f"SELECT status FROM responses WHERE id = {db.quote(created.id)}")
        assert status in ("queued", "in_progress"), "killed too late"
    finally:
        fake.token_delay = 0.0
    assert _printed(first).count(RAN) == 1 and EXECUTED not in _printed(first), _printed(first)

    second = server_factory(database_url, app=SERVED, env=env).start()  # a new working directory
    client = second.client()
    final = wait_terminal(client, created.id, timeout=90)
    assert final.status == "completed", (final.error, second.log())
    check_sequence(stream_events(second.base_url, created.id), label=created.id)
    (call,) = _mcp_calls(final)
    assert call == before, (call, before)
    assert output_texts(final) == [f"helpful: Tool get_weather returned: {call['output']}"], output_texts(
        final
    )
    # The journal's result, not a second run (get_weather's output is random): the agent's own
    # function middleware wraps the journal's, so it logs the replayed call once more.
    assert _printed(second).count(RAN) == 1, _printed(second)
    asks = [c for c in fake.calls_since(mark) if c.prompt.dialogue[-1].role == "user"]
    assert len(asks) == 1, [c.prompt.dialogue for c in asks]  # the tool-calling model call: replayed

    answer = [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": True}]
    done = client.responses.create(
        model="approval_sessions", input=answer, previous_response_id=paused.id, store=True
    )
    assert done.status == "completed", done.error
    check_sequence(stream_events(second.base_url, done.id), label=done.id)
    (call,) = _mcp_calls(done)
    assert (call["output"], call["approval_request_id"]) == (
        "Added 'dentist appointment' to calendar on March 15th",
        request["id"],
    ), call
    assert json.loads(call["arguments"]) == {"event_name": "dentist appointment", "date": "March 15th"}
    assert _printed(second).count(EXECUTED) == 1, _printed(second)
