"""Functional workflows (`@workflow` / `@step`, issue 36) hosted by the real server, on SQLite and
PostgreSQL: a streamed turn ends with the return value as JSON; a pause (`ctx.request_info`) is a
`function_call` answered with `function_call_output`; a bad input is a 400 naming the schema; the
app's input schema is readable; a new turn is a new run. The `--app` forms: the definition, its
built workflow and `.build().as_agent()`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
from agent_framework import FunctionalWorkflow, FunctionalWorkflowAgent

from durable_responses.examples.functional import order_pipeline
from tests.support.inprocess import InProcessServer
from tests.support.responses import assert_error_shape

DEFINITION = "durable_responses.examples.functional:order_pipeline"
BUILT = "tests.e2e.test_functional_workflows:built"
AS_AGENT = "tests.e2e.test_functional_workflows:as_agent"


def built() -> FunctionalWorkflow:
    return order_pipeline.build()


def as_agent() -> FunctionalWorkflowAgent:
    return order_pipeline.build().as_agent()


def _post(c: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return c.post("/v1/responses", json={"model": "m", **body})


def _ok(c: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = _post(c, body)
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    assert data["status"] == "completed", data
    return data


def _texts(resp: dict[str, Any]) -> list[str]:
    return [
        "".join(p.get("text", "") for p in o["content"]) for o in resp["output"] if o["type"] == "message"
    ]


def _calls(resp: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in resp["output"] if o["type"] == "function_call"]


def test_a_functional_workflow_streams_its_return_value(shared_servers: Any) -> None:
    for app in (DEFINITION, BUILT, AS_AGENT):
        srv: InProcessServer = shared_servers(app)
        client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="x", max_retries=0)
        with client.responses.stream(model="m", input='{"item": "tea", "quantity": 3}') as stream:
            types = [e.type for e in stream]
            final = stream.get_final_response()
        assert final.status == "completed", (app, final.error)
        assert types[0] == "response.created" and types[-1] == "response.completed", types
        assert json.loads(final.output_text) == {
            "item": "tea",
            "quantity": 3,
            "total": 37.5,
            "approved": True,
            "booking": "BOOKED-tea-3",
        }, app


def test_a_functional_pause_is_answered_with_a_function_call_output(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(DEFINITION)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _ok(c, {"input": '{"item": "cake", "quantity": 3}', "store": True})
        (call,) = _calls(paused)
        assert call["name"] == "request_info"
        assert json.loads(call["arguments"])["data"] == {"order": "cake", "total": 105.0}
        err = assert_error_shape(
            _post(
                c,
                {
                    "previous_response_id": paused["id"],
                    "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "soon"}],
                },
            ),
            400,
        )
        assert err["code"] == "invalid_function_call_output" and "bool" in err["message"], err
        done = _ok(
            c,
            {
                "previous_response_id": paused["id"],
                "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "false"}],
            },
        )
        receipt = json.loads(_texts(done)[0])
        assert receipt["approved"] is False and receipt["booking"] == "DECLINED-cake-3", receipt
        # A new turn after it is a new run on its own input.
        again = _ok(c, {"previous_response_id": done["id"], "input": '{"item": "coffee"}'})
        assert json.loads(_texts(again)[0])["booking"] == "BOOKED-coffee-1"


def test_a_bad_functional_input_is_a_400_and_its_schema_is_readable(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(DEFINITION)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        err = assert_error_shape(_post(c, {"input": "a cup of tea"}), 400)
        assert err["code"] == "invalid_workflow_input" and '"title":"Order"' in err["message"], err
        model = c.get("/v1/models").json()["data"][0]
    assert model["kind"] == "functional_workflow" and model["input"] == "typed"
    assert model["input_schema"]["required"] == ["item"]
