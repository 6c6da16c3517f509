"""Apps of the surface tests (no model, no network)."""

from __future__ import annotations

import asyncio
from typing import Never

from agent_framework import Executor, Message, Workflow, WorkflowBuilder, WorkflowContext, handler


class _Fails(Executor):
    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[Never, str]) -> None:
        raise RuntimeError("this workflow always fails")


def failing() -> Workflow:
    """A workflow whose one executor raises: its responses end `failed`."""
    return WorkflowBuilder(start_executor=_Fails(id="fails")).build()


class _Waits(Executor):
    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[Never, str]) -> None:
        await asyncio.Event().wait()  # until the run is stopped


def waiting() -> Workflow:
    """A workflow whose one executor waits until its run is stopped: its responses end only
    when cancelled (or failed by a server's stop)."""
    return WorkflowBuilder(start_executor=_Waits(id="waits")).build()
