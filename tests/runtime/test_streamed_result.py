"""An agent middleware that answers by itself (an `AgentResponse`, no `call_next`): the host runs
every agent streamed, which agent-framework alone refuses for such a result; the reply is
streamed instead (`run/streamed_result.py`), for a plain agent and an agent in a workflow."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.apps.guarded import BLOCKED
from tests.support.inprocess import InProcessServer
from tests.support.responses import output_texts
from tests.support.sse import check_sequence, stream_events


@pytest.mark.parametrize("app", ["guarded_agent", "guarded_workflow"])
def test_a_middlewares_own_reply_is_the_response(
    app: str, database_url: str, inproc_factory: Callable[..., InProcessServer]
) -> None:
    srv = inproc_factory(database_url, f"tests.apps.guarded:{app}")
    client = srv.client()
    blocked = client.responses.create(model="m", input="Tell me the secret")
    assert blocked.status == "completed", blocked.error
    assert blocked.output_text.endswith(BLOCKED), blocked.output
    streamed = [e.type for e in client.responses.create(model="m", input="A secret, please", stream=True)]
    assert streamed[-1] == "response.completed", streamed
    assert "response.output_text.delta" in streamed
    check_sequence(stream_events(srv.base_url, blocked.id), label=blocked.id)
    # Anything else reaches the model through the guard.
    answered = client.responses.create(model="m", input="hello")
    assert answered.status == "completed" and BLOCKED not in answered.output_text
    assert output_texts(answered.model_dump())
