"""Workflows whose start executor takes a typed input (issue 36), hosted by the real server.

The apps: `typed_fanout` (a dataclass input, fan-out / fan-in, a dataclass output) and `review`
(a `str` input, `request_info` with the workflow's own dataclasses) from the examples, and the
small ones below (`str`, `int`, `bool`, pydantic starts; a TypedDict start, which
agent-framework 1.23 cannot route to, is refused at start-up: tests/test_startup_errors.py). On SQLite and PostgreSQL,
through the unmodified openai client where a client would use it:
- a streamed turn completes and its output is the workflow's value as text (JSON when structured);
- a bad input is a 400 `invalid_workflow_input` whose message holds the expected JSON schema, and
  nothing is created;
- `GET /v1/models/{id}` shows the app's input schema;
- a pause on the workflow's own request type is answered without any `--allow-checkpoint-type`;
- a new turn of a typed workflow is a new run on the new input.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import openai
from agent_framework import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler, response_handler
from pydantic import BaseModel

from tests.support.inprocess import InProcessServer
from tests.support.responses import assert_error_shape

FANOUT = "durable_responses.examples.typed_fanout:typed_fanout"
REVIEW = "durable_responses.examples.review:review"
UPPER = "tests.e2e.test_typed_workflows:upper"
DOUBLE = "tests.e2e.test_typed_workflows:double"
FLAG = "tests.e2e.test_typed_workflows:flag"
GREET = "tests.e2e.test_typed_workflows:greet"
UNDECLARED = "tests.e2e.test_typed_workflows:undeclared_pause"


# region apps


class _Upper(Executor):
    def __init__(self) -> None:
        super().__init__(id="upper")

    @handler
    async def run(self, text: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(text.upper())


def upper() -> Workflow:
    ex = _Upper()
    return WorkflowBuilder(name="upper", start_executor=ex, output_from=[ex]).build()


class _Double(Executor):
    def __init__(self) -> None:
        super().__init__(id="double")

    @handler
    async def run(self, n: int, ctx: WorkflowContext[None, int]) -> None:
        await ctx.yield_output(n * 2)


def double() -> Workflow:
    ex = _Double()
    return WorkflowBuilder(name="double", start_executor=ex, output_from=[ex]).build()


class _Flag(Executor):
    def __init__(self) -> None:
        super().__init__(id="flag")

    @handler
    async def run(self, on: bool, ctx: WorkflowContext[None, bool]) -> None:
        await ctx.yield_output(not on)


def flag() -> Workflow:
    ex = _Flag()
    return WorkflowBuilder(name="flag", start_executor=ex, output_from=[ex]).build()


class Person(BaseModel):
    name: str
    age: int


class _Greet(Executor):
    def __init__(self) -> None:
        super().__init__(id="greet")

    @handler
    async def run(self, person: Person, ctx: WorkflowContext[None, Person]) -> None:
        await ctx.yield_output(Person(name=person.name.title(), age=person.age + 1))


def greet() -> Workflow:
    ex = _Greet()
    return WorkflowBuilder(name="greet", start_executor=ex, output_from=[ex]).build()


@dataclasses.dataclass
class Undeclared:
    """A request payload no handler of the workflow declares (its handler takes `object`)."""

    question: str


class _AsksUndeclared(Executor):
    def __init__(self) -> None:
        super().__init__(id="asks")

    @handler
    async def run(self, text: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.request_info(request_data=Undeclared(text), response_type=str)

    @response_handler
    async def answered(self, original: object, answer: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(answer)


def undeclared_pause() -> Workflow:
    ex = _AsksUndeclared()
    return WorkflowBuilder(name="undeclared", start_executor=ex, output_from=[ex]).build()


# endregion

# region helpers


def _client(srv: InProcessServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url + "/v1", api_key="x", max_retries=0)


def _post(c: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return c.post("/v1/responses", json={"model": "m", **body})


def _ok(c: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = _post(c, body)
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    assert data["status"] in ("completed", "incomplete"), data
    return data


def _texts(resp: dict[str, Any]) -> list[str]:
    return [
        "".join(p.get("text", "") for p in o["content"]) for o in resp["output"] if o["type"] == "message"
    ]


def _calls(resp: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in resp["output"] if o["type"] == "function_call"]


# endregion


def test_typed_fan_out_fan_in_streams_its_report_as_json(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(FANOUT)
    client = _client(srv)
    with client.responses.stream(model="m", input='{"numbers": [3, 1, 2], "label": "sample"}') as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.status == "completed"
    report = json.loads(final.output_text)
    assert report == {"label": "sample", "count": 3, "stats": {"max": 3.0, "mean": 2.0, "sum": 6.0}}
    # The same input as a user message whose text is a fenced JSON block.
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        # DevUI's form: the JSON object itself as `input`.
        body = _ok(c, {"input": {"numbers": [4, 8], "label": "obj"}})
        assert json.loads(_texts(body)[0])["stats"] == {"max": 8.0, "mean": 6.0, "sum": 12.0}
        fenced = '```json\n{"numbers": [5]}\n```'
        body = _ok(c, {"input": [{"role": "user", "content": [{"type": "input_text", "text": fenced}]}]})
        assert json.loads(_texts(body)[0])["stats"] == {"max": 5.0, "mean": 5.0, "sum": 5.0}


def test_a_bad_typed_input_is_a_400_naming_the_schema_and_creates_nothing(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(FANOUT)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        for bad in ("three numbers please", '{"numbers": "many"}', '{"label": "no numbers"}'):
            err = assert_error_shape(_post(c, {"input": bad, "store": True}), 400)
            assert err["code"] == "invalid_workflow_input" and err["param"] == "input", err
            assert "Expected JSON schema:" in err["message"], err
            schema = json.loads(err["message"].split("Expected JSON schema: ", 1)[1])
            assert schema["required"] == ["numbers"] and schema["title"] == "Batch", schema


def test_the_input_schema_of_the_app_is_readable_over_http(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(FANOUT)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        models = c.get("/v1/models").json()["data"]
        assert len(models) == 1
        model = c.get(f"/v1/models/{models[0]['id']}").json()
        overview = c.get("/v1/admin/overview")
        assert overview.status_code == 200, overview.text
        assert overview.json()["app_input"] == {k: model[k] for k in ("kind", "input", "input_schema")}
    assert model["kind"] == "workflow" and model["input"] == "typed"
    assert model["input_schema"]["properties"]["numbers"] == {
        "items": {"type": "integer"},
        "title": "Numbers",
        "type": "array",
    }
    echo = shared_servers()
    with httpx.Client(base_url=echo.base_url, timeout=60) as c:
        plain = c.get("/v1/models").json()["data"][0]
    assert plain["input"] == "messages" and plain["input_schema"]["type"] == "string"


def test_scalar_and_model_starts_parse_the_text_and_show_json(shared_servers: Any) -> None:
    cases: list[tuple[str, str, str]] = [
        (UPPER, "hello there", "HELLO THERE"),
        (DOUBLE, " 21 ", "42"),
        (FLAG, "true", "false"),
        (GREET, '{"name": "ada lovelace", "age": 36}', '{"name": "Ada Lovelace", "age": 37}'),
    ]
    for app, text, expected in cases:
        srv: InProcessServer = shared_servers(app)
        with httpx.Client(base_url=srv.base_url, timeout=60) as c:
            assert _texts(_ok(c, {"input": text})) == [expected], app
    bad: list[tuple[str, str, str]] = [
        (DOUBLE, "twenty", '"type":"integer"'),
        (GREET, '{"name": "x"}', '"required":["name","age"]'),
    ]
    for app, text, schema_part in bad:
        srv = shared_servers(app)
        with httpx.Client(base_url=srv.base_url, timeout=60) as c:
            err = assert_error_shape(_post(c, {"input": text}), 400)
            assert err["code"] == "invalid_workflow_input" and schema_part in err["message"], err


def test_a_pause_on_the_workflows_own_request_type_is_answered_without_any_flag(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(REVIEW)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _ok(c, {"input": "tea", "store": True})
        (call,) = _calls(paused)
        assert json.loads(call["arguments"])["data"] == {"draft": "A short guide to tea", "round": 1}
        verdict = json.dumps({"approved": False, "note": "shorter"})
        again = _ok(
            c,
            {
                "previous_response_id": paused["id"],
                "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": verdict}],
            },
        )
        assert again["status"] == "completed", again
        (call2,) = _calls(again)
        assert json.loads(call2["arguments"])["data"]["round"] == 2
        # A reply that is no Verdict is refused up front, naming the type.
        wrong = _post(
            c,
            {
                "previous_response_id": again["id"],
                "input": [{"type": "function_call_output", "call_id": call2["call_id"], "output": "maybe"}],
            },
        )
        err = assert_error_shape(wrong, 400)
        assert err["code"] == "invalid_function_call_output" and "Verdict" in err["message"], err
        done = _ok(
            c,
            {
                "previous_response_id": again["id"],
                "input": [
                    {
                        "type": "function_call_output",
                        "call_id": call2["call_id"],
                        "output": json.dumps({"approved": True}),
                    }
                ],
            },
        )
        assert _texts(done) == ["Approved after 2 round(s): A short guide to tea (shorter)"], done


def test_a_new_turn_of_a_typed_workflow_is_a_new_run_on_the_new_input(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(DOUBLE)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        conv = c.post("/v1/conversations", json={}).json()["id"]
        first = _ok(c, {"input": "2", "conversation": conv})
        second = _ok(c, {"input": "5", "conversation": conv})
        third = _ok(c, {"input": "7", "previous_response_id": second["id"]})
        assert (_texts(first), _texts(second), _texts(third)) == (["4"], ["10"], ["14"])
        items = c.get(f"/v1/conversations/{conv}/items", params={"order": "asc"}).json()["data"]
        said = ["".join(p.get("text", "") for p in i["content"]) for i in items if i["type"] == "message"]
        assert said == ["2", "4", "5", "10"], said


def test_a_pause_on_a_payload_that_cannot_be_checkpointed_fails_the_pausing_turn(shared_servers: Any) -> None:
    """A request whose payload is off the allow-list (the workflow does not declare its type) fails
    the turn that pauses on it, naming the type and the flag, not the turn that answers it."""
    srv: InProcessServer = shared_servers(UNDECLARED)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        r = _post(c, {"input": "why?", "store": True})
        assert r.status_code == 200, r.text
        body = r.json()
    assert body["status"] == "failed", body
    message = body["error"]["message"]
    assert "tests.e2e.test_typed_workflows:Undeclared" in message, message
    assert "--allow-checkpoint-type" in message and "paused on a request" in message, message
    assert not _calls(body), body
