"""Tool approvals as data: the approval a plain agent's run ended waiting for, and the calls an
approval answer of a later turn decides (the client answered the request; the call itself was
never shown), or that the framework held back with it (`session_calls`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_framework import Message


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
                    call.name or "", arguments_json(call.arguments), content.id
                )
    return calls


def session_calls(session: Mapping[str, Any] | None) -> dict[str, AnsweredCall]:
    """The function calls a plain agent's stored session holds (`AgentSession.to_dict()`), by
    call id: a batch that waits for approval keeps its calls that need none there too, held
    back (never shown) until the answering turn runs them with the approved ones. Found
    wherever the session keeps them (any `function_call` content, whatever the release's
    layout)."""
    calls: dict[str, AnsweredCall] = {}
    stack: list[Any] = [session] if session else []
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            call_id, name = node.get("call_id"), node.get("name")
            if node.get("type") == "function_call" and isinstance(call_id, str) and call_id and name:
                arguments = arguments_json(node.get("arguments"))
                calls.setdefault(call_id, AnsweredCall(str(name), arguments, None))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return calls
