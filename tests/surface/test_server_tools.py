"""A turn in which the server ran a tool, read by the unmodified clients people use (issue 35):
the Vercel AI SDK (`generateText`, `streamText`), the openai Node SDK (tests/node/server_tools.mjs)
and openai-python (sync and async, `create` and `responses.stream`). Each completes the turn, its
final text holds the tool's result, and no client is asked to run a tool it did not declare: the
tool is one `mcp_call` item, closed before the text that follows it opens. SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from openai import AsyncOpenAI

from tests.agents.hosted import check_event, check_response_body
from tests.support.inprocess import InProcessServer
from tests.support.sse import check_sequence, stream_events

from . import node

APP = "durable_responses.examples.tools:tools_agent"
PROMPT = "lookup_order order_id=A1"
RESULT = "order A1 shipped on 2026-11-30"


def test_vercel_ai_sdk_and_openai_node_complete_a_server_tool_turn(database_url: str) -> None:
    with InProcessServer(database_url, APP) as srv:
        out = node.run("server_tools.mjs", {"BASE_URL": srv.base_url + "/v1"})
    assert out.strip().endswith("ok")


def _check_ran_tool(output: list[Any]) -> None:
    assert [i.type for i in output] == ["mcp_call", "message"]
    call = output[0]
    assert call.name == "lookup_order" and json.loads(call.arguments) == {"order_id": "A1"}
    assert call.output == RESULT and call.status == "completed" and call.server_label == "cashier"


def test_openai_python_completes_a_server_tool_turn(database_url: str) -> None:
    with InProcessServer(database_url, APP) as srv:
        client = srv.client()
        created = client.responses.create(model="m", input=PROMPT)
        assert created.status == "completed"
        _check_ran_tool(created.output)
        assert RESULT in created.output_text

        with client.responses.stream(model="m", input=PROMPT) as stream:
            kinds = [e.type for e in stream]
            final = stream.get_final_response()
        _check_ran_tool(final.output)
        assert RESULT in final.output_text
        assert "response.function_call_arguments.delta" not in kinds

        async def async_turn() -> Any:
            async with AsyncOpenAI(base_url=srv.base_url + "/v1", api_key="k", max_retries=0) as aclient:
                async with aclient.responses.stream(model="m", input=PROMPT) as astream:
                    async for _ in astream:
                        pass
                    return await astream.get_final_response()

        _check_ran_tool(asyncio.run(async_turn()).output)

        # Every event valid (the `mcp_call` item against the openai SDK's own type); the call is
        # added and done before the message is added.
        events = stream_events(srv.base_url, final.id)
        check_sequence(events, label="server tool turn")
        for event in events:
            check_event(event)
        shown = [
            (e["type"].rsplit(".", 1)[-1], e["item"]["type"])
            for e in events
            if e["type"] in ("response.output_item.added", "response.output_item.done")
        ]
        assert shown == [
            ("added", "mcp_call"),
            ("done", "mcp_call"),
            ("added", "message"),
            ("done", "message"),
        ]
        check_response_body(httpx.get(f"{srv.base_url}/v1/responses/{final.id}", timeout=30).json())

        # Sent back as history (`input=previous.output + [...]`), the item is accepted.
        again = client.responses.create(
            model="m",
            input=[
                {"role": "user", "content": PROMPT},
                *[i.model_dump(exclude_none=True) for i in created.output],
                {"role": "user", "content": "thanks"},
            ],
        )
        assert again.status == "completed" and again.output_text, again.error
