"""Pacing a workflow's events: each one reaches the host's stream when it is made.

Private name: ``Workflow._runner_context`` (the framework's own ``WorkflowAgent`` reads it too).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from agent_framework import WorkflowEvent

__all__ = ["pace_events"]

# The attribute of a runner context that holds its current pace callback (see `pace_events`).
_PACE_ATTR = "_durable_responses_pace"


def pace_events(agent: Any, pace: Callable[[], Awaitable[None]]) -> bool:
    """Make every event the workflow behind ``agent`` emits await ``pace()`` once it is queued.

    In 1.23.0 ``ctx.yield_output`` only puts the event on the runner's unbounded queue: an
    executor that yields many outputs without awaiting anything else runs its whole handler
    before the runner (and the host's stream) sees the first one (a 1000-output superstep
    showed its first output only after all 1000). ``pace`` gives the loop a turn (the runner
    takes the event at once) or holds the executor while the host waits for a commit. Only
    this workflow instance's context is changed; returns False (no pacing) where the agent is
    not a workflow or the framework no longer looks like this.
    """
    workflow = getattr(agent, "workflow", None)
    ctx = getattr(workflow, "_runner_context", None)
    if ctx is None:
        return False
    if _PACE_ATTR in vars(ctx):
        # The app hands out the same workflow again: swap the callback, do not wrap twice.
        setattr(ctx, _PACE_ATTR, pace)
        return True
    add_event = getattr(ctx, "add_event", None)
    if add_event is None or not inspect.iscoroutinefunction(add_event):
        return False

    async def paced_add_event(event: WorkflowEvent[Any]) -> None:
        await add_event(event)
        await getattr(ctx, _PACE_ATTR)()

    setattr(ctx, _PACE_ATTR, pace)
    ctx.add_event = paced_add_event
    return True
