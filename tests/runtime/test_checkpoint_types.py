"""The checkpoint allow-list admits an agent executor's structured-output class (`response_format`):
the `AgentResponse` the executor sends on carries its parsed `value`, so every checkpoint taken
while that response is queued holds an instance (agent-framework's edge_condition and
switch_case samples: a kill mid the next superstep could not be recovered from them). A class no
handler declares is named by `refused_type_names`, which the host logs as a checkpoint is saved."""

from __future__ import annotations

import asyncio
from typing import Any, Never

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorResponse,
    InMemoryCheckpointStorage,
    WorkflowBuilder,
    WorkflowCheckpoint,
)
from agent_framework import WorkflowContext as Ctx
from agent_framework import executor as executor_fn
from pydantic import BaseModel

from durable_responses.runtime._af_private.checkpoints import (
    decode_checkpoint,
    encode_checkpoint,
    pickled_type_names,
    refused_type_names,
)
from durable_responses.runtime.apps.apps import declared_types
from durable_responses.testing.chat_client import RuleChatClient


class Verdict(BaseModel):
    is_spam: bool
    reason: str


@executor_fn(id="report")
async def report(response: AgentExecutorResponse, ctx: Ctx[Never, str]) -> None:
    await ctx.yield_output(Verdict.model_validate_json(response.agent_response.text).reason)


def _workflow() -> Any:
    detector = AgentExecutor(
        Agent(
            client=RuleChatClient(),
            name="detector",
            instructions="You are a spam detector.",
            default_options={"response_format": Verdict},
        )
    )
    return WorkflowBuilder(start_executor=detector).add_edge(detector, report).build()


def test_an_agents_response_format_is_a_declared_type() -> None:
    assert f"{__name__}:Verdict" in declared_types(_workflow())


def test_every_checkpoint_of_a_structured_output_workflow_decodes_with_its_declared_types() -> None:
    workflow = _workflow()
    allowed = sorted(declared_types(workflow))
    storage = InMemoryCheckpointStorage()

    async def run() -> list[Any]:
        result = await workflow.run("Win a prize now", checkpoint_storage=storage)
        assert result.get_outputs()[-1] == "reason_value", result.get_outputs()
        return await storage.list_checkpoints(workflow_name=workflow.name)

    checkpoints = asyncio.run(run())
    assert len(checkpoints) >= 2, checkpoints
    for checkpoint in checkpoints:
        decode_checkpoint(encode_checkpoint(checkpoint), allowed_types=allowed)


class _Kept:
    """Kept in workflow state only: no handler declares it."""


class _AlsoKept:
    pass


def test_the_refused_types_of_a_checkpoint_are_named_each_once() -> None:
    checkpoint = WorkflowCheckpoint(
        workflow_name="w",
        graph_signature_hash="h",
        state={"a": _Kept(), "b": [_AlsoKept(), _Kept()], "note": '"__type__":"x:y"'},
    )
    text = encode_checkpoint(checkpoint)
    kept, also = f"{__name__}:_Kept", f"{__name__}:_AlsoKept"
    assert {kept, also} <= pickled_type_names(text)
    assert "x:y" not in pickled_type_names(text)  # a string holding the marker is not a value
    assert sorted(refused_type_names(text)) == sorted([kept, also])
    assert refused_type_names(text, allowed_types=[kept]) == [also]
    assert refused_type_names(text, allowed_types=[kept, also]) == []
