"""Agents behind a guard middleware that answers a blocked query by itself (sets
`context.result` to an `AgentResponse`, no `call_next`), as agent-framework's
class_based_middleware sample does: a plain agent, and the same agent in a workflow."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent_framework import Agent, AgentContext, AgentMiddleware, AgentResponse, Message, Workflow
from agent_framework_orchestrations import SequentialBuilder

from durable_responses.testing.chat_client import RuleChatClient

BLOCKED = "Blocked: that query asks for a secret."


class Guard(AgentMiddleware):
    async def process(self, context: AgentContext, call_next: Callable[[], Awaitable[None]]) -> None:
        if "secret" in (context.messages[-1].text if context.messages else "").lower():
            context.result = AgentResponse(messages=[Message("assistant", [BLOCKED])])
            return
        await call_next()


def _agent() -> Agent:
    return Agent(client=RuleChatClient(), name="guarded", instructions="You answer.", middleware=[Guard()])


def guarded_agent() -> Agent:
    return _agent()


def guarded_workflow() -> Workflow:
    return SequentialBuilder(participants=[_agent()]).build()
