"""The fake model server, driven by agent-framework's real OpenAI clients and the openai SDK.

Each test runs a real `agent_framework.Agent` (or the raw SDK) against `FakeModel` on loopback, over
chat completions and the Responses API, streaming and not: tool calls the agent runs, results that
reach the model, approval-gated tools, usage, reasoning, errors, determinism and the manager
prompts of the official orchestrations.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agent_framework import Agent, AgentResponse, AgentSession, Content, Message, tool
from agent_framework.exceptions import ChatClientException
from agent_framework_openai import OpenAIChatClient, OpenAIChatCompletionClient
from agent_framework_orchestrations._magentic import (
    ORCHESTRATOR_FINAL_ANSWER_PROMPT,
    ORCHESTRATOR_PROGRESS_LEDGER_PROMPT,
    ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT,
    ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT,
)

from durable_responses.testing import FakeModel, Usage
from durable_responses.testing._prompt import Prompt, Turn
from durable_responses.testing._rules import reply_for
from tests.support.servers import free_port

APIS = ["chat", "responses"]
RAN: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    RAN.append(f"get_weather:{city}")
    return f"sunny in {city}"


@tool(approval_mode="always_require")
def delete_file(path: str) -> str:
    """Delete a file (needs approval)."""
    RAN.append(f"delete_file:{path}")
    return f"deleted {path}"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


@pytest.fixture(autouse=True)
def _clear_ran() -> None:
    RAN.clear()


def make_agent(fake: FakeModel, api: str, **kwargs: Any) -> Agent:
    cls = OpenAIChatCompletionClient if api == "chat" else OpenAIChatClient
    client = cls(model="fake-model", api_key="test-key", base_url=fake.base_url)
    kwargs.setdefault("instructions", "You are weatherbot.")
    return Agent(client=client, name="weather", tools=[get_weather, delete_file], **kwargs)


async def run(
    agent: Agent, messages: Any, stream: bool, **kwargs: Any
) -> tuple[AgentResponse, list[Content]]:
    """The final response, and every content streamed (empty when not streaming)."""
    if not stream:
        return await agent.run(messages, **kwargs), []
    updates = [u async for u in agent.run(messages, stream=True, **kwargs)]
    return AgentResponse.from_updates(updates), [c for u in updates for c in u.contents]


def usage_of(response: AgentResponse) -> Usage:
    d: Any = response.usage_details or {}
    return Usage(
        input_tokens=d.get("input_token_count", 0),
        output_tokens=d.get("output_token_count", 0),
        reasoning_tokens=d.get("reasoning_output_token_count", 0),
        cached_tokens=d.get("cache_read_input_token_count", 0),
    )


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", APIS)
async def test_agent_runs_a_named_tool_and_the_result_reaches_the_model(
    fake: FakeModel, api: str, stream: bool
) -> None:
    mark = fake.mark()
    response, streamed = await run(make_agent(fake, api), "what does get_weather say? city=Paris", stream)
    assert RAN == ["get_weather:Paris"]
    assert response.text.endswith("weatherbot: Tool get_weather returned: sunny in Paris")
    first, second = fake.calls_since(mark)
    assert first.tool_calls == ["get_weather"] and json.loads(first.reply.calls[0].arguments) == {
        "city": "Paris"
    }
    assert second.prompt.dialogue[-1] == Turn(
        role="tool", text="sunny in Paris", tool_call_id=second.prompt.dialogue[-1].tool_call_id
    )
    assert {c.agent for c in (first, second)} == {"weatherbot"}
    # usage: the response's equals what the fake reported for its two model calls
    assert usage_of(response) == fake.usage_total(since=mark)
    if stream:
        kinds = [c.type for c in streamed]
        assert kinds.index("function_call") < kinds.index("function_result") < kinds.index("text")
        assert kinds.count("usage") == 2


@pytest.mark.parametrize("api", APIS)
async def test_a_tool_is_not_called_again_after_its_result(fake: FakeModel, api: str) -> None:
    mark = fake.mark()
    await run(make_agent(fake, api), "get_weather please", False)
    assert RAN == ["get_weather:city_value"]
    assert [c.tool_calls for c in fake.calls_since(mark)] == [["get_weather"], []]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", APIS)
async def test_approval_gated_tool_waits_and_approve_or_reject_reaches_the_model(
    fake: FakeModel, api: str, stream: bool
) -> None:
    for approved in (True, False):
        RAN.clear()
        agent = make_agent(fake, api)
        session = agent.create_session()
        first, _ = await run(agent, "delete_file path=/tmp/a", stream, session=session)
        requests = [c for m in first.messages for c in m.contents if c.type == "function_approval_request"]
        assert len(requests) == 1 and requests[0].function_call is not None
        assert requests[0].function_call.name == "delete_file" and RAN == []
        # a fresh agent and a session restored from its dict, as a host would after a restart
        restored = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())))
        answer = Message(role="user", contents=[requests[0].to_function_approval_response(approved)])
        mark = fake.mark()
        second, _ = await run(make_agent(fake, api), answer, stream, session=restored)
        result = fake.calls_since(mark)[-1].prompt.dialogue[-1]
        if approved:
            assert RAN == ["delete_file:/tmp/a"] and result.text == "deleted /tmp/a"
        else:
            assert RAN == [] and result.text == "Error: Tool call invocation was rejected by user."
        assert second.text.endswith(f"Tool delete_file returned: {result.text}")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("code", "status", "error_type"),
    [
        ("context_length_exceeded", 400, openai.BadRequestError),
        ("rate_limit_exceeded", 429, openai.RateLimitError),
        ("server_error", 500, openai.InternalServerError),
    ],
)
async def test_model_error_raises_with_status_and_code(
    fake: FakeModel, api: str, stream: bool, code: str, status: int, error_type: type[Exception]
) -> None:
    mark = fake.mark()
    with pytest.raises(ChatClientException) as caught:
        await run(make_agent(fake, api), f"hello model_error:{code}", stream)
    cause = caught.value.__cause__
    assert isinstance(cause, error_type)
    assert isinstance(cause, openai.APIStatusError)
    assert cause.status_code == status and cause.code == code
    assert [c.status for c in fake.calls_since(mark)] == [status]  # not retried
    assert fake.usage_total(since=mark) == Usage()


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", APIS)
async def test_reasoning_when_asked(fake: FakeModel, api: str, stream: bool) -> None:
    mark = fake.mark()
    response, streamed = await run(make_agent(fake, api), "think about the sky", stream)
    call = fake.calls_since(mark)[0]
    assert call.reply.reasoning == 'Thinking about "think about the sky" step by step.'
    assert call.usage is not None and call.usage.reasoning_tokens == 12
    assert usage_of(response).reasoning_tokens == 12
    reasoning = [c for m in response.messages for c in m.contents if c.type == "text_reasoning"]
    assert reasoning
    if api == "responses":  # summary text
        assert "".join(c.text or "" for c in reasoning) == call.reply.reasoning
        if stream:
            assert [c.text for c in streamed if c.type == "text_reasoning" and c.text][:2] == [
                "Thinking",
                " about",
            ]
    else:  # chat completions: agent-framework only reads `reasoning_details`, as protected data
        assert any(c.protected_data and "Thinking about" in c.protected_data for c in reasoning)


@pytest.mark.parametrize("api", APIS)
async def test_reasoning_parameter_asks_for_reasoning(fake: FakeModel, api: str) -> None:
    agent = make_agent(fake, api)
    mark = fake.mark()
    options: Any = {"reasoning": {"effort": "low"}} if api == "responses" else {"reasoning_effort": "low"}
    await agent.run("hello", options=options)
    assert fake.calls_since(mark)[0].reply.reasoning


def test_replies_are_a_pure_function_of_the_request(fake: FakeModel) -> None:
    body = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": "You are echo."}, {"role": "user", "content": "hi there"}],
    }
    streams = []
    for _ in range(2):
        with httpx.stream("POST", f"{fake.base_url}/chat/completions", json=body) as r:
            chunks = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
        for c in chunks:
            del c["id"], c["created"]
        streams.append(chunks)
    assert streams[0] == streams[1]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in streams[0] if c["choices"]) == (
        'echo: You said "hi there"'
    )
    assert streams[0][-1]["choices"] == [] and streams[0][-1]["usage"]["completion_tokens"] == 8
    assert all(c["usage"] is None for c in streams[0][:-1])


def test_openai_sdk_stream_helpers_accept_both_apis(fake: FakeModel) -> None:
    sdk = openai.OpenAI(base_url=fake.base_url, api_key="k")
    tools: Any = [
        {
            "type": "function",
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
    ]
    with sdk.responses.stream(
        model="m", input="think, then lookup q=cats", tools=tools, include=["reasoning.encrypted_content"]
    ) as stream:
        types = [e.type for e in stream]
        final = stream.get_final_response()
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    assert [o.type for o in final.output] == ["reasoning", "function_call"]
    assert final.output[1].type == "function_call" and json.loads(final.output[1].arguments) == {"q": "cats"}
    assert final.usage is not None and final.usage.output_tokens_details.reasoning_tokens > 0
    assert final.usage.input_tokens_details.cached_tokens == 0
    follow = sdk.responses.create(
        model="m",
        previous_response_id=final.id,
        input=[{"type": "function_call_output", "call_id": final.output[1].call_id, "output": "3 cats"}],
    )
    assert follow.output_text == "assistant: Tool lookup returned: 3 cats"
    assert follow.usage is not None and follow.usage.input_tokens_details.cached_tokens > 0
    chat = sdk.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "hello tokens=40"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(chat)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 40
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 40
    assert sdk.models.list().data[0].id == "fake-model"


def test_unknown_previous_response_is_a_400(fake: FakeModel) -> None:
    sdk = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(model="m", input="hi", previous_response_id="resp_missing")
    assert caught.value.code == "previous_response_not_found"


def test_token_delay_paces_each_streamed_token() -> None:
    with FakeModel(token_delay=0.02) as slow:
        body = {"model": "m", "stream": True, "input": "hi tokens=10"}
        start = time.monotonic()
        with httpx.stream("POST", f"{slow.base_url}/responses", json=body) as r:
            deltas = [line for line in r.iter_lines() if line == "event: response.output_text.delta"]
        assert len(deltas) == 10 and time.monotonic() - start >= 0.2
        assert slow.calls[0].finished


def prompt_of(*turns: Turn, tools: tuple[Any, ...] = (), system: str = "") -> Prompt:
    return Prompt(api="chat", model="m", stream=False, turns=turns, tools=tools, instructions=system)


def test_handoff_calls_the_named_target_never_itself() -> None:
    from durable_responses.testing._prompt import ToolSpec

    tools = tuple(
        ToolSpec(f"handoff_to_{n}", f"Handoff to the {n} agent.", {}) for n in ("billing", "technical")
    )
    user = Turn(role="user", text="I have a question about my billing")
    assert [c.name for c in reply_for(prompt_of(user, tools=tools, system="You are triage.")).calls] == [
        "handoff_to_billing"
    ]
    assert reply_for(prompt_of(user, tools=tools, system="You are billing.")).calls == ()
    assert reply_for(prompt_of(Turn(role="user", text="hello"), tools=tools)).calls == ()


def test_magentic_manager_prompts_are_answered_in_order() -> None:
    team = "- alice: researcher\n- bob: writer"
    facts = reply_for(
        prompt_of(Turn(role="user", text=ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT.format(task="T")))
    )
    assert facts.text.startswith("1. GIVEN OR VERIFIED FACTS")
    plan = reply_for(
        prompt_of(Turn(role="user", text=ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT.format(team=team)))
    )
    assert plan.text == "- alice: do their part of the request.\n- bob: do their part of the request."
    ledger_prompt = Turn(
        role="user",
        text=ORCHESTRATOR_PROGRESS_LEDGER_PROMPT.format(task="Write a poem", team=team, names="alice, bob"),
    )
    history: list[Turn] = []
    speakers = []
    for _ in range(3):
        ledger = json.loads(reply_for(prompt_of(*history, ledger_prompt)).text)
        if ledger["is_request_satisfied"]["answer"]:
            break
        speakers.append(ledger["next_speaker"]["answer"])
        history += [Turn(role="assistant", text=ledger["instruction_or_question"]["answer"])]
    assert speakers == ["alice", "bob"]
    assert history[0].text == "alice, please do your part of the task: Write a poem"
    final = reply_for(
        prompt_of(Turn(role="user", text=ORCHESTRATOR_FINAL_ANSWER_PROMPT.format(task="Write a poem")))
    )
    assert final.text == "Final answer: the team has completed the task: Write a poem"


def test_command_line_serves_the_fake() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "durable_responses.testing.fake_model",
            "--port",
            str(port),
            "--token-delay-ms",
            "1",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        # A cold interpreter's imports took over 15 s on a loaded two-core machine.
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, f"the fake model exited with {proc.returncode}"
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert r.json()["data"][0]["id"] == "fake-model"
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/responses", json={"model": "m", "input": "hi"}).json()
        assert reply["output"][0]["content"][0]["text"] == 'assistant: You said "hi"'
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("api", APIS)
def test_a_tool_result_without_its_call_is_refused_as_openai_does(fake: FakeModel, api: str) -> None:
    sdk = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    refused = len(fake.refused)
    with pytest.raises(openai.BadRequestError) as caught:
        if api == "chat":
            sdk.chat.completions.create(
                model="m",
                messages=[
                    {"role": "user", "content": "hi"},
                    {"role": "tool", "tool_call_id": "c1", "content": "x"},
                ],
            )
        else:
            sdk.responses.create(
                model="m",
                input=[
                    {"type": "message", "role": "user", "content": "hi"},
                    {"type": "function_call_output", "call_id": "c1", "output": "x"},
                ],
            )
    assert "tool" in caught.value.message.lower()
    assert len(fake.refused) == refused + 1 and fake.refused[-1].api == api


def test_token_limit_tool_choice_and_json_object_are_honoured(fake: FakeModel) -> None:
    """A token limit cuts the reply as OpenAI does (chat: `finish_reason: "length"`; Responses:
    an `incomplete` response, reason `max_output_tokens`, streamed as `response.incomplete`);
    `tool_choice: "none"` calls no tool, a forced function is called; `json_object` gives JSON;
    every request is in the log as sent."""
    sdk = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    mark = fake.mark()
    chat = sdk.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hello tokens=40"}], max_completion_tokens=8
    )
    assert chat.choices[0].finish_reason == "length" and chat.usage is not None
    assert chat.usage.completion_tokens == 8
    cut = sdk.responses.create(model="m", input="hello tokens=40", max_output_tokens=8, temperature=0.2)
    assert cut.status == "incomplete" and cut.incomplete_details is not None
    assert cut.incomplete_details.reason == "max_output_tokens"
    with sdk.responses.stream(model="m", input="hello tokens=40", max_output_tokens=8) as stream:
        assert [e.type for e in stream][-1] == "response.incomplete"
    tools: Any = [{"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}]
    none = sdk.responses.create(model="m", input="lookup please", tools=tools, tool_choice="none")
    assert [o.type for o in none.output] == ["message"]
    forced = sdk.responses.create(
        model="m", input="hi", tools=tools, tool_choice={"type": "function", "name": "lookup"}
    )
    assert [o.type for o in forced.output] == ["function_call"]
    as_json = sdk.responses.create(model="m", input="hi there", text={"format": {"type": "json_object"}})
    assert json.loads(as_json.output_text) == {"reply": "hi there"}
    logged = [c.request for c in fake.calls_since(mark)]
    assert logged[0]["max_completion_tokens"] == 8
    assert logged[1]["max_output_tokens"] == 8 and logged[1]["temperature"] == 0.2
    assert logged[3]["tool_choice"] == "none"
