"""Tool approvals as data: the approval a plain agent's run ended waiting for, and the calls an
approval answer of a later turn decides (the client answered the request; the call itself was
never shown).

A model turn that calls an approval-gated tool beside tools the server runs pauses whole:
agent-framework holds the other calls (in the agent's session, inside the workflow's checkpoint)
and runs them only once the approval is answered. Those held calls were never shown either
(`mapping`): `held_calls` finds them in what the paused turn left (a checkpoint's state, a
session), so the turn that answers shows each with its name and arguments when it runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_framework import Content, Message


@dataclass(frozen=True)
class PendingApproval:
    """A tool approval a plain agent's run ended waiting for (its answer needs the request)."""

    request_id: str
    request: dict[str, Any]  # the framework's approval request content, as `Content.to_dict()`


@dataclass(frozen=True)
class AnsweredCall:
    """A call an approval answer of this turn decides (its request was shown, not the call)."""

    name: str
    arguments: str
    request_id: str | None
    # False: the answer rejected the call, which never runs (the framework tells the model so).
    approved: bool = True


def arguments_json(raw: Any) -> str:
    """A call's arguments as the JSON text an item shows (`{}` when it has none)."""
    if raw is None:
        return "{}"
    return raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"))


def approval_calls(messages: Iterable[Message]) -> dict[str, AnsweredCall]:
    """The calls the approval answers among `messages` decide, by call id."""
    calls: dict[str, AnsweredCall] = {}
    for message in messages:
        for content in message.contents:
            call = content.function_call if content.type == "function_approval_response" else None
            if call is not None and call.call_id:
                calls[call.call_id] = AnsweredCall(
                    call.name or "", arguments_json(call.arguments), content.id, content.approved is not False
                )
    return calls


def _call_of(value: Any) -> tuple[str, str, Any] | None:
    """(call id, name, arguments) of a function call, live or as its `to_dict()` form."""
    if isinstance(value, Content):
        if value.type == "function_call" and value.call_id and value.name:
            return value.call_id, value.name, value.arguments
        return None
    if isinstance(value, Mapping) and value.get("type") == "function_call":
        call_id, name = value.get("call_id"), value.get("name")
        if isinstance(call_id, str) and call_id and isinstance(name, str) and name:
            return call_id, name, value.get("arguments")
    return None


def _children(value: Any) -> Iterable[Any]:
    if isinstance(value, Message):
        return value.contents
    if isinstance(value, Content):
        return (value.function_call,) if value.function_call is not None else ()
    if isinstance(value, Mapping):
        return value.values()
    if isinstance(value, list | tuple):
        return value
    return ()


def held_calls(state: Any) -> dict[str, AnsweredCall]:
    """Every function call (name and arguments, by call id) held anywhere in `state`: a workflow
    checkpoint's state or an agent session's dict, live objects or their dict forms.

    The walk reads only the public shapes of calls (`Content` of type `function_call`, or its
    `to_dict()`), wherever the framework keeps them, so it does not depend on how a release
    arranges its session state. A call id names one call, so any place that holds it agrees."""
    calls: dict[str, AnsweredCall] = {}
    stack: list[Any] = [state]
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        call = _call_of(value)
        if call is not None:
            calls.setdefault(call[0], AnsweredCall(call[1], arguments_json(call[2]), None))
        stack.extend(_children(value))
    return calls
