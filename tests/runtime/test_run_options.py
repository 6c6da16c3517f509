"""Which request options reach an app (`run_options.reach_of`), what the response then echoes
(`applied`) and the `ChatOptions` they become (`chat_options`): pure, on real agents and workflows."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Agent, WorkflowAgent
from agent_framework_orchestrations import SequentialBuilder

from durable_responses.examples.echo import echo
from durable_responses.protocol.errors import ProtocolError
from durable_responses.protocol.request import parse_create_request
from durable_responses.runtime.apps.run_options import Reach, applied, chat_options, reach_of
from durable_responses.testing import RuleChatClient
from tests.agents.apps import no_agents


def _agent() -> Agent:
    return Agent(client=RuleChatClient(), name="a", instructions="You are a.")


class _OwnRun(WorkflowAgent):
    """An app's own run() that does not take client_kwargs."""

    def run(self, messages: Any = None, *, stream: bool = False) -> Any:  # type: ignore[override]
        return super().run(messages, stream=stream)


class _Plain:
    async def run(self, messages: Any = None, **kwargs: Any) -> Any:
        return None


def test_reach_of_each_kind_of_app() -> None:
    agent = reach_of(_agent())
    assert agent.kind == Reach.AGENT and agent.takes_middleware and agent.reasoning_key is None
    assert reach_of(echo().as_agent()).kind == Reach.NONE  # no agent executor
    assert reach_of(_Plain()).kind == Reach.NONE  # run() does not name `options`
    sequential = SequentialBuilder(participants=[_agent()])
    workflow = sequential.build()
    assert reach_of(workflow.as_agent()).kind == Reach.WORKFLOW
    assert reach_of(_OwnRun(workflow)).kind == Reach.NONE


def _req(**body: Any) -> Any:
    return parse_create_request({"model": "m", "input": "hi", **body})


def test_an_app_without_a_model_refuses_or_drops_options() -> None:
    none = reach_of(no_agents().as_agent())
    schema = {"format": {"type": "json_schema", "name": "X", "schema": {"type": "object"}}}
    for body, param in (
        ({"text": schema}, "text.format"),
        ({"text": {"format": {"type": "json_object"}}}, "text.format"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tool_choice": {"type": "function", "name": "f"}}, "tool_choice"),
    ):
        with pytest.raises(ProtocolError) as caught:
            applied(_req(**body), none)
        assert caught.value.param == param and caught.value.code == "unsupported_parameter"
    kept = applied(
        _req(temperature=0.2, top_p=0.3, max_output_tokens=20, instructions="x", reasoning={"effort": "low"}),
        none,
    )
    assert (kept.temperature, kept.top_p, kept.max_output_tokens, kept.instructions, kept.reasoning) == (
        None,
        None,
        None,
        None,
        None,
    )
    assert applied(_req(tool_choice="none"), none).tool_choice == "none"


def test_chat_options_are_agent_frameworks() -> None:
    req = _req(
        text={
            "format": {"type": "json_schema", "name": "Order", "schema": {"type": "object"}, "strict": True}
        },
        tool_choice={"type": "function", "name": "lookup"},
        max_output_tokens=64,
        temperature=0.5,
        top_p=0.9,
        parallel_tool_calls=False,
        metadata={"k": "v"},
        reasoning={"effort": "high", "summary": "auto"},
    )
    assert chat_options(req, "reasoning") == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Order", "schema": {"type": "object"}, "strict": True},
        },
        "tool_choice": {"mode": "required", "required_function_name": "lookup"},
        "max_tokens": 64,
        "temperature": 0.5,
        "top_p": 0.9,
        "allow_multiple_tool_calls": False,
        "metadata": {"k": "v"},
        "reasoning": {"effort": "high", "summary": "auto"},
    }
    effort = chat_options(req, "reasoning_effort", metadata=False)
    assert effort["reasoning_effort"] == "high" and "reasoning" not in effort and "metadata" not in effort
    assert chat_options(_req(), None) == {}
