"""A functional workflow's run that returned is not run again from its last checkpoint.

The framework saves a last checkpoint after the return value's output event, so the host
commits that checkpoint with the output; a restore of it (recovery after a kill -9 between
that commit and the response's end) called the function again and gave the output twice.
`FunctionalAgent` marks that checkpoint and runs nothing from it; a pause's checkpoint still
restores and takes its answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_framework import AgentResponseUpdate, Content, InMemoryCheckpointStorage, Message

from durable_responses.examples.functional import order_pipeline
from durable_responses.runtime.apps.functional import FunctionalAgent, fresh_functional, functional_input


def _agent() -> FunctionalAgent:
    built = fresh_functional(order_pipeline.build())
    return FunctionalAgent(built, functional_input(built), name="order_pipeline")


async def _texts(updates: list[AgentResponseUpdate]) -> list[str]:
    return [c.text for u in updates for c in u.contents if c.type == "text" and c.text]


async def _run(
    agent: FunctionalAgent, storage: InMemoryCheckpointStorage, **kwargs: object
) -> list[AgentResponseUpdate]:
    return [u async for u in agent.run(stream=True, checkpoint_storage=storage, **kwargs)]  # type: ignore[arg-type]


async def _latest(storage: InMemoryCheckpointStorage) -> str:
    latest = await storage.get_latest(workflow_name=_agent().workflow.name)
    assert latest is not None
    return latest.checkpoint_id


async def test_a_restore_of_the_checkpoint_after_the_return_gives_no_second_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "steps.log"
    monkeypatch.setenv("FUNCTIONAL_STEP_LOG", str(log))
    storage = InMemoryCheckpointStorage()
    first = await _run(_agent(), storage, messages=[Message("user", ['{"item": "tea", "quantity": 2}'])])
    (text,) = await _texts(first)
    assert json.loads(text)["booking"] == "BOOKED-tea-2"
    ran = log.read_text().split()

    again = await _run(_agent(), storage, checkpoint_id=await _latest(storage))
    assert await _texts(again) == []
    assert log.read_text().split() == ran  # no step ran again either


async def test_a_pause_checkpoint_still_restores_and_takes_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FUNCTIONAL_STEP_LOG", str(tmp_path / "steps.log"))
    storage = InMemoryCheckpointStorage()
    paused = await _run(_agent(), storage, messages=[Message("user", ['{"item": "cake", "quantity": 3}'])])
    calls = [c for u in paused for c in u.contents if c.type == "function_call"]
    assert len(calls) == 1 and await _texts(paused) == []
    answer = Message("tool", [Content.from_function_result(call_id=calls[0].call_id or "", result="false")])
    answered = await _run(_agent(), storage, checkpoint_id=await _latest(storage), messages=[answer])
    (text,) = await _texts(answered)
    assert json.loads(text)["booking"] == "DECLINED-cake-3"
    # The answering run's own last checkpoint is the one after its return: recovery restores it
    # with the stored answer again, and nothing more comes.
    again = await _run(_agent(), storage, checkpoint_id=await _latest(storage), messages=[answer])
    assert [c for u in again for c in u.contents] == []
