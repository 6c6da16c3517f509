"""An agent middleware's own reply, streamed. The host runs every agent with ``stream=True`` (a
workflow too, whose agent executors then stream their agents); an agent middleware that answers
by itself (it sets ``context.result`` to an ``AgentResponse`` and does not call ``call_next``, as
a guard that blocks a query does) gives a streaming run a result agent-framework refuses
("Expected ResponseStream for streaming, got AgentResponse"), though the same agent run without
streaming returns it.

`StreamedResult`, put outermost on the agent's own middleware (a plain agent's, or each agent
executor's agent's), hands such a result over as the stream of its messages, so the client gets
the middleware's reply as it would from the agent.
Invariant: a stream, or no result, passes through untouched; only a whole response is turned
into updates (one per message, its contents as they are, the usage last).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from agent_framework import (
    AgentContext,
    AgentMiddleware,
    AgentResponse,
    AgentResponseUpdate,
    Content,
    ResponseStream,
)

__all__ = ["StreamedResult", "stream_results"]


class StreamedResult(AgentMiddleware):
    """An ``AgentResponse`` result of a streaming run, as a ``ResponseStream`` of its messages."""

    async def process(self, context: AgentContext, call_next: Callable[[], Awaitable[None]]) -> None:
        await call_next()
        if context.stream and isinstance(context.result, AgentResponse):
            context.result = as_stream(context.result)


def as_stream(response: AgentResponse) -> ResponseStream[AgentResponseUpdate, AgentResponse]:
    """``response`` as the stream a streaming run would have given: one update per message."""
    updates = [
        AgentResponseUpdate(
            contents=list(message.contents),
            role=message.role,
            author_name=message.author_name,
            message_id=message.message_id,
            response_id=response.response_id,
        )
        for message in response.messages
    ]
    if response.usage_details:
        updates.append(
            AgentResponseUpdate(
                contents=[Content.from_usage(response.usage_details)], response_id=response.response_id
            )
        )

    async def replay() -> AsyncIterator[AgentResponseUpdate]:
        for update in updates:
            yield update

    return ResponseStream(replay(), finalizer=AgentResponse.from_updates)


def stream_results(agent: Any, *, is_workflow: bool) -> None:
    """Put `StreamedResult` first (outermost) on the agent's own middleware, once: a plain agent,
    or each agent executor's agent of a workflow (a streamed workflow streams them too)."""
    if not is_workflow:
        _outermost(agent)
        return
    for executor in (getattr(getattr(agent, "workflow", None), "executors", None) or {}).values():
        inner = getattr(executor, "agent", None)
        if inner is not None:
            _outermost(inner)


def _outermost(agent: Any) -> None:
    if not hasattr(agent, "middleware"):
        return
    listed = list(agent.middleware or [])
    if any(isinstance(m, StreamedResult) for m in listed):
        return
    agent.middleware = [StreamedResult(), *listed]
