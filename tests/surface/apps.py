"""Apps of the surface tests (no model, no network)."""

from __future__ import annotations

from typing import Never

from agent_framework import Executor, Message, Workflow, WorkflowBuilder, WorkflowContext, handler


class _Fails(Executor):
    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[Never, str]) -> None:
        raise RuntimeError("this workflow always fails")


def failing() -> Workflow:
    """A workflow whose one executor raises: its responses end `failed`."""
    return WorkflowBuilder(start_executor=_Fails(id="fails")).build()
