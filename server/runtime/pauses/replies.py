"""Answers to a paused response: what it accepts (checked up front, 4xx) and the messages that
deliver each answer to the app.

A workflow paused on requests takes, for each request by kind (see `requests`):
- a `function_call_output` (`call_id` = the request id), converted to the request's declared
  `response_type` (any request); a declaration-only tool's call (a tool only the client runs,
  `FunctionTool(func=None)`) is shown as the model's call and answered by that call's id;
- an `mcp_approval_response` (`approval_request_id` = the request id) for a tool approval;
- the user's next message for a request that takes one (a handoff waiting for the user, an
  agent's reply or a plan under review), when exactly one such request is open; an empty
  input is an empty message ("go on").
A plain agent whose turn ended on tool approvals takes `mcp_approval_response`s for them
(beside anything else: its session holds the conversation).

Invariant: an answer names an open request of the response it continues, or the input is
refused before anything is created or marked answered: a request already answered is a 409,
an unknown one a 400. The messages are built from stored data only (the checkpoint, the
pending rows), so recovery delivers exactly the answer the first run delivered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_framework import Content, Message, WorkflowCheckpoint

from ...protocol import errors
from ...store import PendingRequestRow
from ..apps.messages import (
    ReplyTypeError,
    function_output_value,
    input_items_to_messages,
    type_name,
    typed_result,
)
from .pending import pending_request_data, pending_response_types
from .requests import RequestKind, classify, natural_answer

__all__ = [
    "Pending",
    "answered_ids",
    "approval_messages",
    "check_pause_reply",
    "pending_of",
    "reply_messages",
    "typed_replies",
]

FCO = "function_call_output"
APPROVAL_RESPONSE = "mcp_approval_response"


@dataclass(frozen=True)
class Pending:
    """An open request of a paused workflow, as its checkpoint holds it."""

    request_id: str
    kind: RequestKind
    data: Any
    response_type: Any


def pending_of(checkpoint: WorkflowCheckpoint) -> dict[str, Pending]:
    """Request id -> the request, for every request pending in `checkpoint`."""
    types = pending_response_types(checkpoint)
    return {
        rid: Pending(rid, classify(data), data, types.get(rid))
        for rid, data in pending_request_data(checkpoint).items()
    }


def _declared_calls(requests: Mapping[str, Pending]) -> dict[str, str]:
    """The call id of each pending declaration-only tool call (a tool only the client runs,
    which the framework re-announces as the model's call) -> its request id. The client was
    shown the call, so its `function_call_output` names the call id; the framework delivers a
    result by that id too (`WorkflowAgent` matches it to the request)."""
    calls: dict[str, str] = {}
    for rid, pending in requests.items():
        data = pending.data
        if isinstance(data, Content) and data.type == "function_call" and data.call_id:
            calls[data.call_id] = rid
    return calls


def _answer_id(item: Mapping[str, Any], calls: Mapping[str, str]) -> str:
    """The request a `function_call_output` answers (by request id, or by a declared call's id)."""
    call_id = str(item.get("call_id"))
    return calls.get(call_id, call_id)


def _quoted(ids: Sequence[str]) -> str:
    return ", ".join(f"'{i}'" for i in ids)


def _kind(item: Mapping[str, Any]) -> str:
    return str(item.get("type") or "message")


def _user_messages(items: Sequence[Mapping[str, Any]]) -> list[tuple[int, Mapping[str, Any]]]:
    return [
        (pos, i) for pos, i in enumerate(items) if _kind(i) == "message" and i.get("role", "user") == "user"
    ]


def _message_text(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and "text" in p)


def _message_target(requests: Mapping[str, Pending], open_ids: Sequence[str]) -> str | None:
    """The one open request a plain user message answers, if there is exactly one."""
    targets = [r for r in open_ids if r in requests and requests[r].kind.takes_message]
    return targets[0] if len(targets) == 1 else None


def _check_answer(
    prev_id: str, request_id: str, open_ids: Sequence[str], answered: Mapping[str, Any], what: str, param: str
) -> None:
    if request_id in answered:
        raise errors.conflict(
            f"The request with {what} '{request_id}' was already answered by response "
            f"'{answered[request_id]}'; continue from that response instead.",
            code="call_already_answered" if what == "call_id" else "approval_already_answered",
            param=param,
        )
    if request_id not in open_ids:
        raise errors.bad_request(
            f"No pending request with {what} '{request_id}' on response '{prev_id}'"
            + (f" (it waits for {_quoted(open_ids)})." if open_ids else "."),
            param=param,
            code="unknown_call_id" if what == "call_id" else "unknown_approval_request",
        )


def check_pause_reply(
    prev_id: str,
    items: Sequence[Mapping[str, Any]],
    rows: Sequence[PendingRequestRow],
    requests: Mapping[str, Pending],
) -> None:
    """Refuse (4xx) an input a paused workflow cannot take (see the module docstring)."""
    open_ids = [p.call_id for p in rows if p.status == "pending"]
    answered = {p.call_id: p.answered_by for p in rows if p.status == "answered"}
    calls = _declared_calls(requests)
    for pos, item in enumerate(items):
        if _kind(item) == FCO:
            _check_answer(prev_id, _answer_id(item, calls), open_ids, answered, "call_id", "input")
        elif _kind(item) == APPROVAL_RESPONSE:
            rid = str(item.get("approval_request_id"))
            _check_answer(
                prev_id, rid, open_ids, answered, "approval_request_id", f"input[{pos}].approval_request_id"
            )
            if rid in requests and requests[rid].kind != RequestKind.TOOL_APPROVAL:
                raise errors.bad_request(
                    f"The request '{rid}' of response '{prev_id}' is not a tool approval; answer it with a "
                    "function_call_output item (its call_id and output).",
                    param=f"input[{pos}]",
                    code="not_an_approval_request",
                )
    target = _message_target(requests, open_ids)
    messages = _user_messages(items) if target is not None else []
    if len(messages) > 1:
        pos = messages[1][0]
        raise errors.bad_request(
            f"Response '{prev_id}' waits for one message (its request '{target}'); input[{pos}] is a second "
            "one. Send one user message.",
            param=f"input[{pos}]",
            code="pending_request",
        )
    answers = {FCO, APPROVAL_RESPONSE}
    taken = {pos for pos, _ in messages}
    others = [(pos, i) for pos, i in enumerate(items) if _kind(i) not in answers and pos not in taken]
    if not others and (items or target is not None):
        return
    if not open_ids:
        # Every request it paused for was answered: the workflow went on in the answering response.
        by = list(dict.fromkeys(a for a in answered.values() if a))
        raise errors.conflict(
            f"Response '{prev_id}' is a workflow paused for call_id(s) {_quoted(list(answered))}, "
            f"which response(s) {_quoted(by)} already answered, so it cannot take new input. "
            f"Continue from response '{by[-1] if by else prev_id}' instead "
            "(previous_response_id set to it).",
            code="call_already_answered",
            param="previous_response_id",
        )
    waiting = f"Response '{prev_id}' is a workflow paused waiting for {_waits_for(requests, open_ids)}"
    if not others:  # an empty input
        raise errors.bad_request(
            f"{waiting}; {_how_to_answer(requests, open_ids)}.", param="input", code="pending_request"
        )
    pos, item = others[0]
    if len(others) == len(items):  # nothing but other items: no answer at all
        advice = (
            f"{_how_to_answer(requests, open_ids)}; input[{pos}] is a {_kind(item)} item, which a paused "
            "workflow cannot take."
        )
    else:
        kinds = {requests[r].kind for r in open_ids if r in requests}
        only = "function_call_output items" if kinds <= {RequestKind.GENERIC} else "its answers"
        advice = (
            f"a reply to a paused workflow may contain only {only}, but "
            f"input[{pos}] is a {_kind(item)} item. Send the {only} alone, then "
            "continue from the response they produce."
        )
    raise errors.bad_request(f"{waiting}; {advice}", param=f"input[{pos}]", code="pending_request")


def _waits_for(requests: Mapping[str, Pending], open_ids: Sequence[str]) -> str:
    approvals = [r for r in open_ids if r in requests and requests[r].kind == RequestKind.TOOL_APPROVAL]
    inputs = [r for r in open_ids if r in requests and requests[r].kind.takes_message]
    calls = [r for r in open_ids if r not in approvals and r not in inputs]
    parts = []
    if calls:
        parts.append(f"a function_call_output for call_id(s) {_quoted(calls)}")
    if approvals:
        parts.append(f"an mcp_approval_response for approval_request_id(s) {_quoted(approvals)}")
    if inputs:
        parts.append(f"the user's next message (request(s) {_quoted(inputs)})")
    return " and ".join(parts)


def _how_to_answer(requests: Mapping[str, Pending], open_ids: Sequence[str]) -> str:
    kinds = {requests[r].kind for r in open_ids if r in requests}
    if kinds and all(k == RequestKind.TOOL_APPROVAL for k in kinds):
        return "answer with mcp_approval_response input items (approval_request_id and approve)"
    if kinds and all(k.takes_message for k in kinds):
        return "answer with a user message"
    return "answer with function_call_output input items (call_id and output)"


def answered_ids(
    items: Sequence[Mapping[str, Any]], requests: Mapping[str, Pending], open_ids: Sequence[str]
) -> list[str]:
    """The request ids an (already checked) input answers."""
    calls = _declared_calls(requests)
    ids = [_answer_id(i, calls) for i in items if _kind(i) == FCO]
    ids += [str(i.get("approval_request_id")) for i in items if _kind(i) == APPROVAL_RESPONSE]
    target = _message_target(requests, open_ids)
    if target is not None and (_user_messages(items) or not items):
        ids.append(target)
    return list(dict.fromkeys(ids))


def typed_replies(checkpoint: WorkflowCheckpoint, items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Call id -> each reply's output converted to its request's declared response_type (400 if not)."""
    types = pending_response_types(checkpoint)
    results: dict[str, Any] = {}
    for pos, item in enumerate(items):
        call_id = str(item.get("call_id"))
        if item.get("type") != FCO or call_id not in types:
            continue
        response_type = types[call_id]
        try:
            results[call_id] = function_output_value(item.get("output"), response_type)
        except ReplyTypeError as exc:
            raise errors.bad_request(
                f"Invalid 'input[{pos}].output': the request with call_id '{call_id}' expects a value "
                f"of type {type_name(response_type)} (its response_type), and the output cannot be "
                f"converted to one: {exc}.",
                param=f"input[{pos}].output",
                code="invalid_function_call_output",
            ) from None
    return results


def _approval(request: Any, item: Mapping[str, Any]) -> Content:
    if not isinstance(request, Content) or request.type != "function_approval_request":
        raise errors.bad_request(
            f"The request '{item.get('approval_request_id')}' is not a tool approval.",
            param="input",
            code="not_an_approval_request",
        )
    response: Content = request.to_function_approval_response(bool(item.get("approve")))
    return response


def reply_messages(checkpoint: WorkflowCheckpoint, items: list[dict[str, Any]]) -> list[Message]:
    """The messages that deliver an (already checked) answer to a paused workflow, in input order."""
    requests = pending_of(checkpoint)
    results = typed_replies(checkpoint, items)
    target = _message_target(requests, list(requests))
    if not items and target is not None:
        items = [{"type": "message", "role": "user", "content": []}]  # an empty answer: "go on"
    out: list[Message] = []
    for item in items:
        kind = _kind(item)
        if kind == APPROVAL_RESPONSE:
            request = requests.get(str(item.get("approval_request_id")))
            out.append(Message(role="user", contents=[_approval(request.data if request else None, item)]))
        elif kind == "message" and target is not None and item.get("role", "user") == "user":
            # `from_function_result` keeps text only; the workflow hands `result` to the request.
            shown = Content.from_function_result(call_id=target, result="").items
            answer = typed_result(target, natural_answer(requests[target].kind, _message_text(item)), shown)
            out.append(Message(role="tool", contents=[answer]))
        else:
            out.extend(input_items_to_messages([item], results=results))
    return out


def approval_messages(items: list[dict[str, Any]], rows: Sequence[PendingRequestRow]) -> list[Message]:
    """A plain agent's input with each `mcp_approval_response` as the framework's approval answer
    (built from the stored request, which the agent's session binds it to).

    A rejection's `reason` stays with the stored input item only: the framework's answer has no
    field for it, and any text sent beside it ends up between the call and its (rejected)
    result, a conversation OpenAI refuses (the model is told the call was rejected either way)."""
    stored = {r.call_id: r for r in rows}
    out: list[Message] = []
    for item in items:
        if _kind(item) != APPROVAL_RESPONSE:
            out.extend(input_items_to_messages([item]))
            continue
        row = stored.get(str(item.get("approval_request_id")))
        request = Content.from_dict(json.loads(row.data)) if row is not None else None
        out.append(Message(role="user", contents=[_approval(request, item)]))
    return out


def check_agent_approvals(
    prev_id: str | None, items: Sequence[Mapping[str, Any]], rows: Sequence[PendingRequestRow]
) -> list[str]:
    """A plain agent's approval answers: each names an open approval of the response it continues."""
    approvals = [(pos, i) for pos, i in enumerate(items) if _kind(i) == APPROVAL_RESPONSE]
    if not approvals:
        return []
    if prev_id is None:
        pos = approvals[0][0]
        raise errors.bad_request(
            "An mcp_approval_response answers a request of an earlier response: send it with "
            "previous_response_id (or the same conversation) of the response that asked.",
            param=f"input[{pos}]",
            code="unknown_approval_request",
        )
    open_ids = [r.call_id for r in rows if r.status == "pending"]
    answered = {r.call_id: r.answered_by for r in rows if r.status == "answered"}
    ids: list[str] = []
    for pos, item in approvals:
        rid = str(item.get("approval_request_id"))
        _check_answer(
            prev_id, rid, open_ids, answered, "approval_request_id", f"input[{pos}].approval_request_id"
        )
        ids.append(rid)
    return ids
