"""A tiny app for durable-responses: one workflow step that answers in upper case.

`DURABLE_RESPONSES_APP=my_app:build` makes the server call `build()` for every run and every
recovery, so it must return a fresh workflow (or agent) each time.
"""

from __future__ import annotations

from typing import Never

from agent_framework import Message, WorkflowAgent, WorkflowBuilder, WorkflowContext, executor


@executor(id="shout")
async def shout(messages: list[Message], ctx: WorkflowContext[Never, str]) -> None:
    text = " ".join(m.text for m in messages if m.role == "user")
    await ctx.yield_output(f"my_app heard: {text.upper()}")


def build() -> WorkflowAgent:
    return WorkflowBuilder(start_executor=shout, name="my_app").build().as_agent(name="my-app")
