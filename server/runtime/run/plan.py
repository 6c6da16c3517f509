"""What a run is: the response it drives (`RunSpec`) and how it enters the app (`RunPlan`).

Invariant: both are plain, frozen data derived from stored rows and the request only, so
recovery rebuilds exactly the spec and plan a first run had (continuations:
`continuation.Continuations`); what an earlier life of a response left (its usage, its journal's
counts) goes to the run's sink (`Launcher.sink`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_framework import Message

from ...protocol.request import CreateRequest
from ..pauses.approval_calls import AnsweredCall


@dataclass(frozen=True)
class RunPlan:
    """What to call `agent.run` with: restore a checkpoint, give messages, or both."""

    messages: list[Message]
    checkpoint_id: str | None = None
    # The stored (encoded) checkpoint `checkpoint_id` names, when recovery read it already: the
    # run restores it without reading it again.
    checkpoint_data: str | None = None
    tools: list[Any] = field(default_factory=list)
    # Requests the response already announced (request_info call ids, approval request ids,
    # see `ItemMapper`): recovery must not show them twice.
    announced: frozenset[str] = frozenset()
    # A plain agent's `AgentSession` as the previous turn left it (`AgentSession.to_dict()`);
    # None: a new session. Workflows keep their state in checkpoints instead.
    session: dict[str, Any] | None = None
    # The calls agent-framework held back when the turn this one answers paused (a tool the
    # server runs, called beside an approval-gated one), by call id: never shown, they run once
    # the answer arrives and are shown then, named (`approval_calls.held_calls`).
    held_calls: Mapping[str, AnsweredCall] = field(default_factory=dict)


@dataclass(frozen=True)
class RunSpec:
    """The response a run drives."""

    response_id: str
    user_id: str
    created_at: float
    request: CreateRequest
    background: bool
    # A conversation's turns share checkpoints: `conv:<id>`; otherwise `resp:<response id>`.
    lineage: str
    # Still `queued` (background): the run announces `in_progress` first.
    queued: bool = False
    # Whether every output item of the response will be closed by this run (a first run):
    # the final output then needs no read of the items table.
    all_output_here: bool = True


def lineage_for(req: CreateRequest, response_id: str) -> str:
    return f"conv:{req.conversation_id}" if req.conversation_id else f"resp:{response_id}"
