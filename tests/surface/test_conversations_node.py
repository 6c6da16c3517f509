"""The whole Conversations flow with the unmodified openai Node SDK, on SQLite and PostgreSQL
(tests/node/conversations.mjs: every object checked against the SDK's types' fields)."""

from __future__ import annotations

from tests.support.inprocess import InProcessServer

from . import node


def test_node_sdk_runs_the_conversations_flow(database_url: str) -> None:
    with InProcessServer(database_url, "durable_responses.examples.echo_agent:echo_agent") as srv:
        out = node.run("conversations.mjs", {"BASE_URL": srv.base_url + "/v1"})
    assert out.strip().endswith("ok")
