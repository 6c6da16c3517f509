"""Apps the host cannot serve, each for its own reason (tests/e2e/test_startup_errors.py)."""

from __future__ import annotations

import asyncio
from typing import TypedDict

from agent_framework import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler


def raises() -> Workflow:
    raise RuntimeError("no model configured:\nset MODEL_URL")


def not_an_agent() -> int:
    return 42


def takes_arguments(name: str) -> Workflow:
    raise AssertionError("never called")


class Point(TypedDict):
    x: int
    y: int


class _Point(Executor):
    def __init__(self) -> None:
        super().__init__(id="point")

    @handler
    async def run(self, p: Point, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(str(p))


def typed_dict_start() -> Workflow:
    ex = _Point()
    return WorkflowBuilder(name="point", start_executor=ex, output_from=[ex]).build()


class _Locked(Executor):
    def __init__(self) -> None:
        super().__init__(id="locked")

    @handler
    async def run(self, lock: asyncio.Lock, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output("locked")


def lock_start() -> Workflow:
    ex = _Locked()
    return WorkflowBuilder(name="locked", start_executor=ex, output_from=[ex]).build()
