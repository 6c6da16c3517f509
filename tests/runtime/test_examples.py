"""Tests for the example apps (durable_responses.examples) and the crash-test apps (tests.apps.workflows).

Each app runs in-process through ``agent.run(stream=True)``, as the host drives it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from agent_framework import (
    Agent,
    AgentResponseUpdate,
    Content,
    InMemoryCheckpointStorage,
    Message,
    Workflow,
    WorkflowAgent,
)

import durable_responses.examples as examples
from durable_responses.examples.countdown import DEFAULT_COUNT, parse_countdown_request
from durable_responses.runtime._af_private import make_restorable
from tests.apps.workflows import RecordingWorkflowAgent, recording_countdown, silent_prefix, two_outputs
from tests.support.framework import AGENT_STREAM_ENDS_WITH_METADATA


@pytest.fixture(autouse=True)
def _quiet_self_loop_warning() -> Any:
    logging.getLogger("agent_framework").setLevel(logging.ERROR)
    yield


async def _updates(agent: Any, text: Any = None, **kwargs: Any) -> list[AgentResponseUpdate]:
    return [u async for u in agent.run(text, stream=True, **kwargs)]


def test_factories_are_exported_and_fresh() -> None:
    assert set(examples.__all__) == {
        "approval",
        "approval_agent",
        "countdown",
        "countdown_agent",
        "echo",
        "echo_agent",
    }
    for name in ("echo", "countdown", "approval"):
        factory = getattr(examples, name)
        first, second = factory(), factory()
        assert isinstance(first, Workflow) and first is not second
    assert isinstance(examples.countdown_agent(), WorkflowAgent)
    assert isinstance(examples.approval_agent(), WorkflowAgent)
    assert isinstance(examples.echo_agent(), Agent)


# region echo


async def test_echo_streams_words_as_one_message() -> None:
    updates = await _updates(examples.echo().as_agent(), "hello big world")
    assert [u.text for u in updates] == ["hello", " big", " world"]
    assert len({u.message_id for u in updates}) == 1 and updates[0].message_id
    assert all(u.role == "assistant" for u in updates)


async def test_echo_uses_the_last_user_message() -> None:
    history = [Message(role="user", contents=["first"]), Message(role="assistant", contents=["x"])]
    history.append(Message(role="user", contents=["second  try"]))
    assert "".join(u.text for u in await _updates(examples.echo().as_agent(), history)) == "second  try"


async def test_echo_empty_input() -> None:
    assert [u.text for u in await _updates(examples.echo().as_agent())] == ["(empty)"]
    assert [u.text for u in await _updates(examples.echo().as_agent(), "   ")] == ["(empty)"]


async def test_echo_non_streaming() -> None:
    response = await examples.echo().as_agent().run("hello big world")
    assert [m.text for m in response.messages] == ["hello big world"]


# endregion

# region countdown


@pytest.mark.parametrize(
    ("text", "n", "delay"),
    [
        ("3", 3, 0.2),
        ("countdown 7", 7, 0.2),
        ("4 delay=0.05", 4, 0.05),
        ("", DEFAULT_COUNT, 0.2),
        ("go", 5, 0.2),
    ],
)
def test_parse_countdown_request(text: str, n: int, delay: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COUNTDOWN_DELAY_SECONDS", raising=False)
    request = parse_countdown_request(text)
    assert (request.n, request.delay) == (n, delay)


def test_countdown_delay_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNTDOWN_DELAY_SECONDS", "0.01")
    assert parse_countdown_request("2").delay == 0.01
    assert parse_countdown_request("2 delay=0.5").delay == 0.5


async def test_countdown_one_tick_per_superstep() -> None:
    storage = InMemoryCheckpointStorage()
    updates = await _updates(examples.countdown_agent(), "countdown 3 delay=0", checkpoint_storage=storage)
    assert [u.text for u in updates] == ["tick 3", "tick 2", "tick 1", "tick 0"]
    assert len({u.message_id for u in updates}) == 4
    # Entry checkpoint + start superstep + one per tick.
    assert len(await storage.list_checkpoint_ids(workflow_name="countdown")) == 6


async def test_countdown_honours_the_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNTDOWN_DELAY_SECONDS", "0.05")
    started = time.monotonic()
    assert [u.text for u in await _updates(examples.countdown().as_agent(), "2")] == [
        "tick 2",
        "tick 1",
        "tick 0",
    ]
    assert time.monotonic() - started >= 0.15


async def test_countdown_agent_name() -> None:
    assert examples.countdown_agent().name == "countdown"


# endregion

# region approval


async def test_approval_pauses_then_completes_on_a_fresh_instance() -> None:
    storage = InMemoryCheckpointStorage()
    first = examples.approval_agent()
    updates = await _updates(first, "release v2", checkpoint_storage=storage)
    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "request_info"
    pause_id = await first.workflow.resolve_pause_checkpoint_id(
        [str(calls[0].call_id)], checkpoint_storage=storage
    )
    assert pause_id

    second = make_restorable(examples.approval_agent())
    answer = Message(
        role="tool", contents=[Content.from_function_result(call_id=calls[0].call_id, result="approve")]
    )
    texts = [
        u.text for u in await _updates(second, answer, checkpoint_id=pause_id, checkpoint_storage=storage)
    ]
    assert texts == ["Completed with decision: approve"]


async def test_approval_rejects_empty_input() -> None:
    with pytest.raises(Exception):  # noqa: B017 - the seed's start executor raises ValueError inside the run
        await _updates(examples.approval_agent(), "   ")


# endregion

# region echo agent


async def test_echo_agent_streams_word_by_word() -> None:
    updates = await _updates(examples.echo_agent(), "hello big world")
    if AGENT_STREAM_ENDS_WITH_METADATA:
        *updates, metadata = updates
        assert not metadata.contents and metadata.additional_properties
    assert [u.text for u in updates] == ["echo:", " hello", " big", " world", " (turn", " 1)"]
    assert len({u.message_id for u in updates}) == 1


async def test_echo_agent_counts_turns_from_history() -> None:
    history = [
        Message(role="user", contents=["one"]),
        Message(role="assistant", contents=["echo: one (turn 1)"]),
        Message(role="user", contents=["two"]),
    ]
    response = await examples.echo_agent().run(history)
    assert response.text == "echo: two (turn 2)"


async def test_echo_agent_calls_a_declared_tool() -> None:
    from durable_responses.runtime.apps.messages import declaration_tools

    tools = declaration_tools([{"type": "function", "name": "lookup", "parameters": {"type": "object"}}])
    updates = await _updates(examples.echo_agent(), "call lookup now", tools=tools)
    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    assert calls and all(c.name == "lookup" for c in calls)
    assert calls[0].arguments == "{}"
    response = await examples.echo_agent().run("call lookup now", tools=tools)
    (call,) = [c for m in response.messages for c in m.contents if c.type == "function_call"]
    assert call.name == "lookup"
    # An undeclared tool name is just echoed.
    assert (
        "".join(u.text for u in await _updates(examples.echo_agent(), "call other"))
        == "echo: call other (turn 1)"
    )


async def test_echo_agent_quotes_a_tool_result_and_calls_nothing_more() -> None:
    """After the client answered its call, the agent replies with the result instead of calling
    the tool again (a client that runs tools until none is called would loop)."""
    from durable_responses.runtime.apps.messages import declaration_tools

    tools = declaration_tools([{"type": "function", "name": "lookup", "parameters": {"type": "object"}}])
    history = [
        Message(role="user", contents=["call lookup now"]),
        Message(
            role="assistant",
            contents=[Content.from_function_call(call_id="c1", name="lookup", arguments="{}")],
        ),
        Message(role="tool", contents=[Content.from_function_result(call_id="c1", result="sunny")]),
    ]
    response = await examples.echo_agent().run(history, tools=tools)
    assert not [c for m in response.messages for c in m.contents if c.type == "function_call"]
    assert response.text == "echo: lookup returned sunny (turn 1)"


# endregion

# region crash-test apps


async def test_recording_countdown_records_run_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "runs.jsonl"
    monkeypatch.setenv("RECORD_RUN_CALLS", str(record))
    storage = InMemoryCheckpointStorage()
    agent = recording_countdown()
    assert isinstance(agent, RecordingWorkflowAgent)
    assert [u.text for u in await _updates(agent, "2 delay=0", checkpoint_storage=storage)] == [
        "tick 2",
        "tick 1",
        "tick 0",
    ]
    checkpoints = sorted(await storage.list_checkpoints(workflow_name="countdown"), key=lambda c: c.timestamp)
    middle = checkpoints[2]  # entry, start superstep, then the one after "tick 2"
    recovered = make_restorable(recording_countdown())
    texts = [
        u.text
        for u in await _updates(recovered, checkpoint_id=middle.checkpoint_id, checkpoint_storage=storage)
    ]
    assert texts == ["tick 1", "tick 0"]
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert lines == [
        {"pid": os.getpid(), "checkpoint_id": None, "has_messages": True},
        {"pid": os.getpid(), "checkpoint_id": middle.checkpoint_id, "has_messages": False},
    ]


async def test_recording_countdown_without_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECORD_RUN_CALLS", raising=False)
    assert [u.text for u in await _updates(recording_countdown(), "0 delay=0")] == ["tick 0"]


async def test_silent_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = tmp_path / "steps"
    monkeypatch.setenv("RECORD_STEPS", str(steps))
    monkeypatch.setenv("STEP_DELAY_SECONDS", "0.01")
    storage = InMemoryCheckpointStorage()
    saves: list[int] = []
    texts: list[str] = []
    agent = silent_prefix().as_agent()
    original_save = storage.save

    async def counting_save(checkpoint: Any) -> str:
        saves.append(len(texts))
        return await original_save(checkpoint)

    storage.save = counting_save  # type: ignore[method-assign]
    async for update in agent.run("go", stream=True, checkpoint_storage=storage):
        texts.append(update.text)
    assert texts == ["out 1", "out 2", "done"]
    assert steps.read_text().splitlines() == ["silent_1", "silent_2"]
    # Entry, two silent supersteps (no output before them), then the outputs superstep and "done".
    assert saves == [0, 0, 0, 2, 3]


async def test_two_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [u.text for u in await _updates(two_outputs().as_agent(), "3 delay=0.01")]
    assert texts == ["a3", "b3", "a2", "b2", "a1", "b1"]


# endregion
