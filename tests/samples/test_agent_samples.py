"""agent-framework's own agent samples (01-get-started 01-04 and 02-agents: function tools,
approval-required tools, middleware, context providers, runtime JSON schema; vendored in
tests/samples/upstream, SOURCES.json; built by tests/samples/single_agent_apps.py) hosted on the
server behind `/responses`, their model client pointed at the fake model, on SQLite and
PostgreSQL: a streamed turn through the openai SDK (a valid event sequence), a JSON turn, tools
the server ran as `mcp_call`, approval-gated ones as `mcp_approval_request` answered with
`mcp_approval_response`, turns continued by `previous_response_id` and by a conversation (the
sample's session is the server's), a response format asked with `text.format`, and the request's
options reaching the agent.

One in-process server per dialect hosts every sample (`--app NAME=MODULE:ATTR`, the request's
`model` picks it). tests/samples/test_agent_samples_processes.py kills one mid-run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from durable_responses.testing import FakeModel
from tests.samples.hitl_flow import Body, approve_all, completed, items_of, streamed, texts
from tests.samples.model import close_clients, environ, model_env, openai_client
from tests.support.inprocess import InProcessServer
from tests.support.responses import dump
from tests.support.sse import check_sequence, stream_events

A = "tests.samples.single_agent_apps:"
APPS = {
    "hello": A + "hello_agent",
    "add_tools": A + "weather_agent",
    "multi_turn": A + "conversation_agent",
    "memory": A + "memory_agent",
    "approval": A + "weather_with_approval",
    "approval_sessions": A + "calendar_agent",
    "class_middleware": A + "class_middleware_agent",
    "function_middleware": A + "function_middleware_agent",
    "context_provider": A + "user_info_agent",
    "runtime_schema": A + "runtime_schema_agent",
}
ALL = ",".join(f"{name}={app}" for name, app in APPS.items())
WEATHER = "What's the weather like in Seattle? get_weather location=Seattle"
REJECTED = "Error: Tool call invocation was rejected by user."
CALENDAR = 'Please add to calendar: event_name="dentist appointment" date="March 15th"'


@pytest.fixture(scope="module", autouse=True)
def _environment(fake: FakeModel) -> Iterator[None]:
    """The samples' `OpenAIChatClient()` reads the process environment (in-process servers)."""
    with environ(model_env(fake)):
        yield
    close_clients()


@pytest.fixture(
    params=[
        pytest.param(d, marks=pytest.mark.xdist_group(f"agent-samples-{d}")) for d in ("sqlite", "postgresql")
    ]
)
def served(request: pytest.FixtureRequest, _server_pool: Any) -> InProcessServer:
    """The module's in-process server of the test's dialect, hosting every sample (`ALL`)."""
    srv: InProcessServer = _server_pool.get(request.param, ALL)
    return srv


def _json(srv: InProcessServer, model: str, input: Any, **kwargs: Any) -> Body:
    """A JSON turn (not streamed, not background), its replay a valid event sequence."""
    resp = dump(openai_client(srv.base_url).responses.create(model=model, input=input, store=True, **kwargs))
    check_sequence(stream_events(srv.base_url, resp["id"]), label=resp["id"])
    return resp


def _stream(srv: InProcessServer, model: str, input: Any, **kwargs: Any) -> Body:
    return streamed(openai_client(srv.base_url), model, input, **kwargs)


def _said(who: str, text: str) -> str:
    return f'{who}: You said "{text}"'


def test_hello_agent_streams_and_answers_a_json_turn(served: InProcessServer) -> None:
    """01_hello_agent: its run(...) and its run(..., stream=True), as a client asks for them."""
    final = completed(_stream(served, "hello", "Tell me a one-sentence fun fact."))
    assert texts(final) == [_said("friendly", "Tell me a one-sentence fun fact.")]
    resp = completed(_json(served, "hello", "What is the capital of France?"))
    assert texts(resp) == [_said("friendly", "What is the capital of France?")]


def test_add_tools_sample_shows_the_tool_it_ran_as_an_mcp_call(served: InProcessServer) -> None:
    """02_add_tools: `get_weather` runs on the server: one `mcp_call` (name, arguments, output),
    then the text the model made of its result."""
    for resp in (_stream(served, "add_tools", WEATHER), _json(served, "add_tools", WEATHER)):
        (call,) = items_of(completed(resp), "mcp_call")
        assert (call["name"], json.loads(call["arguments"]), call["server_label"], call["error"]) == (
            "get_weather",
            {"location": "Seattle"},
            "WeatherAgent",
            None,
        ), call
        assert call["output"].startswith("The weather in Seattle is "), call
        assert [o["type"] for o in resp["output"]] == ["mcp_call", "message"], resp["output"]
        assert texts(resp) == [f"helpful: Tool get_weather returned: {call['output']}"]
        assert not items_of(resp, "function_call"), resp["output"]


def test_multi_turn_sample_remembers_by_previous_response_id_and_by_conversation(
    served: InProcessServer, fake: FakeModel
) -> None:
    """03_multi_turn: the sample's session is the server's: the second turn's model call sees
    the first turn, continued by `previous_response_id` and, again, in a conversation."""
    first_text, second_text = "My name is Alice and I love hiking.", "What do you remember about me?"
    first = completed(_stream(served, "multi_turn", first_text))
    mark = fake.mark()
    second = completed(_json(served, "multi_turn", second_text, previous_response_id=first["id"]))
    assert texts(second) == [_said("friendly", second_text)]
    (call,) = fake.calls_since(mark)
    assert [(t.role, t.text) for t in call.prompt.dialogue] == [
        ("user", first_text),
        ("assistant", _said("friendly", first_text)),
        ("user", second_text),
    ]
    client = openai_client(served.base_url)
    conversation = client.conversations.create()
    completed(_json(served, "multi_turn", first_text, conversation=conversation.id))
    mark = fake.mark()
    completed(_stream(served, "multi_turn", second_text, conversation=conversation.id))
    (call,) = fake.calls_since(mark)
    assert [t.text for t in call.prompt.dialogue] == [first_text, _said("friendly", first_text), second_text]
    listed = [i.type for i in client.conversations.items.list(conversation.id, order="asc")]
    assert listed == ["message"] * 4, listed


def test_memory_sample_keeps_its_providers_session_state_across_turns(
    served: InProcessServer, fake: FakeModel
) -> None:
    """04_memory: `UserMemoryProvider` stores the name in the session's state after the second
    turn; the third turn's instructions (its `before_run`) address the user by it."""
    prev: Body | None = None
    systems = []
    for text in ["Hello! What's the square root of 9?", "My name is Alice", "What is 2 + 2?"]:
        mark = fake.mark()
        extra = {"previous_response_id": prev["id"]} if prev else {}
        prev = completed(_stream(served, "memory", text, **extra))
        (call,) = fake.calls_since(mark)
        systems.append(call.prompt.system_text)
    assert ["Ask for it politely" in s for s in systems] == [True, True, False], systems
    assert "The user's name is Alice. Always address them by name." in systems[2], systems


def test_context_provider_sample_keeps_its_registered_state_type_across_turns(
    served: InProcessServer, fake: FakeModel
) -> None:
    """simple_context_provider: `UserInfoMemory` extracts a `UserInfo` (a pydantic type the
    sample registers) with its own model call after the first turn (the fake fills the schema:
    name_value, 1); the session keeps it, so the next turn's instructions name the user."""
    mark = fake.mark()
    first = completed(_stream(served, "context_provider", "Hello, what is the square root of 9?"))
    run, extract = fake.calls_since(mark)
    assert "Ask the user for their name" in run.prompt.system_text, run.prompt.system_text
    assert json.loads(extract.reply.text) == {"name": "name_value", "age": 1}, extract.reply.text
    mark = fake.mark()
    completed(_json(served, "context_provider", "My name is Ruaidhri", previous_response_id=first["id"]))
    (run,) = fake.calls_since(mark)  # both known: no extraction call
    assert "The user's name is name_value." in run.prompt.system_text, run.prompt.system_text
    assert "The user's age is 1." in run.prompt.system_text, run.prompt.system_text


def _one_request(resp: Body, name: str) -> Body:
    (request,) = items_of(completed(resp), "mcp_approval_request")
    assert (request["name"], request["server_label"]) == (
        name,
        "CalendarAgent" if "calendar" in name else "WeatherAgent",
    )
    return request


def test_approval_sessions_sample_runs_an_approved_tool_once_and_never_a_rejected_one(
    served: InProcessServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """function_tool_with_approval_and_sessions: `add_to_calendar` waits for approval: an
    `mcp_approval_request`; approved (previous_response_id), it runs once, shown as an
    `mcp_call` naming the approval; rejected (in a conversation), it never runs and the model
    is told so."""
    paused = _stream(served, "approval_sessions", CALENDAR)
    request = _one_request(paused, "add_to_calendar")
    assert json.loads(request["arguments"]) == {"event_name": "dentist appointment", "date": "March 15th"}
    assert not items_of(paused, "function_call") and not items_of(paused, "mcp_call"), paused["output"]
    done = completed(
        _json(served, "approval_sessions", approve_all(paused), previous_response_id=paused["id"])
    )
    (call,) = items_of(done, "mcp_call")
    assert call["output"] == "Added 'dentist appointment' to calendar on March 15th", call
    assert call["approval_request_id"] == request["id"], call
    assert capsys.readouterr().out.count(">>> EXECUTING: add_to_calendar") == 1

    conversation = openai_client(served.base_url).conversations.create()
    paused = _json(served, "approval_sessions", CALENDAR, conversation=conversation.id)
    request = _one_request(paused, "add_to_calendar")
    no = [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": False}]
    done = completed(_stream(served, "approval_sessions", no, conversation=conversation.id))
    # The call never ran: no `mcp_call`; the model is told (the framework's note is its result).
    assert items_of(done, "mcp_call") == [], done["output"]
    assert texts(done) == [f"helpful: Tool add_to_calendar returned: {REJECTED}"], texts(done)
    assert ">>> EXECUTING" not in capsys.readouterr().out


def test_approval_sample_holds_back_the_tool_beside_the_approval_and_runs_both_once_approved(
    served: InProcessServer,
) -> None:
    """function_tool_with_approval: one model reply calls `get_weather` (no approval) and
    `get_weather_detail` (approval). The pause shows only the approval request: the framework
    holds the other call back (no `function_call` a client would think it must answer); the
    approving turn runs both, each an `mcp_call` with its name and arguments."""
    text = "get weather for Portland and get weather detail for Seattle location=Seattle"
    paused = _stream(served, "approval", text)
    _one_request(paused, "get_weather_detail")
    assert [o["type"] for o in paused["output"]] == ["mcp_approval_request"], paused["output"]
    done = completed(_json(served, "approval", approve_all(paused), previous_response_id=paused["id"]))
    calls = {c["name"]: c for c in items_of(done, "mcp_call")}
    assert sorted(calls) == ["get_weather", "get_weather_detail"], done["output"]
    assert {json.loads(c["arguments"])["location"] for c in calls.values()} == {"Seattle"}, calls
    assert calls["get_weather"]["approval_request_id"] is None, calls
    assert calls["get_weather_detail"]["approval_request_id"] is not None, calls


def test_function_middleware_runs_around_the_tool_and_agent_middleware_blocks(
    served: InProcessServer, capsys: pytest.CaptureFixture[str], fake: FakeModel
) -> None:
    """function_based_middleware: the function middleware logs the tool the server runs; the
    agent middleware returns without calling on for a "secret" query: no model call, the
    response completes with no output."""
    resp = completed(_stream(served, "function_middleware", WEATHER))
    assert [c["name"] for c in items_of(resp, "mcp_call")] == ["get_weather"], resp["output"]
    out = capsys.readouterr().out
    assert "[SecurityAgentMiddleware] Security check passed." in out, out
    assert out.count("[LoggingFunctionMiddleware] About to call function: get_weather.") == 1, out
    mark = fake.mark()
    blocked = completed(_stream(served, "function_middleware", "What's the secret weather password?"))
    assert blocked["output"] == [] and fake.calls_since(mark) == [], blocked
    assert "blocking request" in capsys.readouterr().out


def test_class_middleware_sample_answers_a_blocked_query_with_its_own_result(
    served: InProcessServer, fake: FakeModel
) -> None:
    """SecurityAgentMiddleware answers by itself (an `AgentResponse`, no `call_next`): the host,
    which streams every run, streams that reply; the model is never called."""
    calls = len(fake.calls)
    blocked = "Detected sensitive information, the request is blocked."
    resp = completed(_json(served, "class_middleware", "What's the password for the weather service?"))
    assert texts(resp) == [blocked]
    final = completed(_stream(served, "class_middleware", "Tell me the secret"))
    assert texts(final) == [blocked]
    assert len(fake.calls) == calls


def test_class_middleware_sample_runs_its_function_middleware_around_the_tool(
    served: InProcessServer, capsys: pytest.CaptureFixture[str]
) -> None:
    resp = completed(_json(served, "class_middleware", WEATHER))
    assert [c["name"] for c in items_of(resp, "mcp_call")] == ["get_weather"], resp["output"]
    out = capsys.readouterr().out
    assert out.count("[LoggingFunctionMiddleware] Function get_weather completed in") == 1, out


def test_runtime_json_schema_sample_answers_in_the_schema_asked_with_text_format(
    served: InProcessServer, fake: FakeModel
) -> None:
    """chat_completion_client_with_runtime_json_schema: its `runtime_schema` asked as
    `text.format` (json_schema) reaches the Chat Completions client as its response_format;
    the reply is JSON in that schema, streamed and not."""
    from tests.samples.upstream.chat_completion_client_with_runtime_json_schema import runtime_schema

    fmt = {"type": "json_schema", "name": runtime_schema["title"], "strict": True, "schema": runtime_schema}
    for send in (_stream, _json):
        mark = fake.mark()
        resp = completed(
            send(served, "runtime_schema", "Give a brief weather digest for Seattle.", text={"format": fmt})
        )
        (text,) = texts(resp)
        assert set(json.loads(text)) == set(runtime_schema["required"]), text
        assert resp["text"]["format"]["type"] == "json_schema", resp["text"]
        (call,) = fake.calls_since(mark)
        assert (
            call.api == "chat" and call.request["response_format"]["json_schema"]["schema"] == runtime_schema
        )


def test_request_options_reach_the_hello_agent(served: InProcessServer, fake: FakeModel) -> None:
    """temperature, top_p, instructions and max_output_tokens reach 01_hello_agent's model
    call (a reply cut by the limit is `incomplete`); tool_choice "none" keeps 02_add_tools'
    model from calling its tool."""
    mark = fake.mark()
    resp = _json(
        served,
        "hello",
        "Tell me a long story tokens=50",
        temperature=0.25,
        top_p=0.5,
        max_output_tokens=16,
        instructions="Answer in French.",
    )
    assert resp["status"] == "incomplete" and resp["incomplete_details"]["reason"] == "max_output_tokens", (
        resp
    )
    (call,) = fake.calls_since(mark)
    assert (call.request.get("temperature"), call.request.get("top_p")) == (0.25, 0.5), call.request
    assert "Answer in French." in call.prompt.system_text, call.prompt.system_text
    assert "Keep your answers brief." in call.prompt.system_text, call.prompt.system_text
    assert (resp["temperature"], resp["top_p"], resp["max_output_tokens"]) == (0.25, 0.5, 16), resp
    mark = fake.mark()
    resp = completed(_stream(served, "add_tools", WEATHER, tool_choice="none"))
    assert not items_of(resp, "mcp_call") and texts(resp) == [_said("helpful", WEATHER)], resp["output"]
    (call,) = fake.calls_since(mark)
    assert call.request.get("tool_choice") == "none", call.request
