"""Responses-API wire format for a `Reply`: the Response object, its output items and its events.

The streamed sequence is OpenAI's: response.created, response.in_progress, then per output item
(reasoning, message, function calls, in that order) output_item.added, its parts and deltas (one
per token), output_item.done, and response.completed carrying the usage (a reply cut by the
token limit: its message `incomplete`, and response.incomplete with `incomplete_details.reason`
`max_output_tokens`). `sequence_number` counts from 0. Invariant: the items in the terminal
response equal the items the events built.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._rules import Reply, Usage, tokens


def usage_json(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


@dataclass(frozen=True)
class Ids:
    """The ids of one response: the response's, and one per output item (calls get two)."""

    response: str
    reasoning: str
    message: str
    calls: tuple[tuple[str, str], ...]  # (item id fc_..., call id call_...)


def _encrypted(text: str) -> str:
    return base64.b64encode(b"fake-reasoning:" + hashlib.sha256(text.encode()).digest()).decode()


def output_items(reply: Reply, ids: Ids, include: tuple[str, ...]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        item: dict[str, Any] = {
            "id": ids.reasoning,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": reply.reasoning}],
        }
        if "reasoning.encrypted_content" in include:
            item["encrypted_content"] = _encrypted(reply.reasoning)
        items.append(item)
    if reply.text:
        items.append(
            {
                "id": ids.message,
                "type": "message",
                "status": "incomplete" if reply.truncated else "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
            }
        )
    for (item_id, call_id), call in zip(ids.calls, reply.calls, strict=True):
        items.append(
            {
                "id": item_id,
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    return items


def response_object(
    body: Mapping[str, Any],
    *,
    response_id: str,
    created_at: int,
    status: str,
    output: list[dict[str, Any]],
    usage: Usage | None,
) -> dict[str, Any]:
    reasoning = body.get("reasoning")
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": False,
        "completed_at": created_at if status == "completed" else None,
        "conversation": None,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "metadata": body.get("metadata") or {},
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": None,
        "reasoning": reasoning if isinstance(reasoning, Mapping) else {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_logprobs": 0,
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": usage_json(usage) if usage is not None else None,
        "user": None,
    }


def _item_events(item: dict[str, Any], index: int) -> Iterator[tuple[dict[str, Any], bool]]:
    """(event without sequence_number, is_token) for one output item."""
    at = {"output_index": index, "item_id": item["id"]}
    kind = item["type"]
    if kind == "reasoning":
        text = item["summary"][0]["text"]
        added = {k: v for k, v in item.items() if k != "encrypted_content"} | {"summary": []}
        yield {"type": "response.output_item.added", "output_index": index, "item": added}, False
        part: dict[str, Any] = {"type": "summary_text", "text": ""}
        yield {"type": "response.reasoning_summary_part.added", **at, "summary_index": 0, "part": part}, False
        for piece in tokens(text):
            yield (
                {"type": "response.reasoning_summary_text.delta", **at, "summary_index": 0, "delta": piece},
                True,
            )
        yield {"type": "response.reasoning_summary_text.done", **at, "summary_index": 0, "text": text}, False
        part = {"type": "summary_text", "text": text}
        yield {"type": "response.reasoning_summary_part.done", **at, "summary_index": 0, "part": part}, False
    elif kind == "message":
        text = item["content"][0]["text"]
        added = item | {"status": "in_progress", "content": []}
        yield {"type": "response.output_item.added", "output_index": index, "item": added}, False
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield {"type": "response.content_part.added", **at, "content_index": 0, "part": part}, False
        for piece in tokens(text):
            delta = {"delta": piece, "logprobs": []}
            yield {"type": "response.output_text.delta", **at, "content_index": 0, **delta}, True
        yield (
            {"type": "response.output_text.done", **at, "content_index": 0, "text": text, "logprobs": []},
            False,
        )
        part = part | {"text": text}
        yield {"type": "response.content_part.done", **at, "content_index": 0, "part": part}, False
    else:
        args = item["arguments"]
        added = item | {"status": "in_progress", "arguments": ""}
        yield {"type": "response.output_item.added", "output_index": index, "item": added}, False
        for piece in tokens(args):
            yield {"type": "response.function_call_arguments.delta", **at, "delta": piece}, True
        done = {
            "type": "response.function_call_arguments.done",
            **at,
            "name": item["name"],
            "arguments": args,
        }
        yield done, False
    yield {"type": "response.output_item.done", "output_index": index, "item": item}, False


def events(
    body: Mapping[str, Any], reply: Reply, ids: Ids, *, created_at: int, include: tuple[str, ...]
) -> Iterator[tuple[dict[str, Any], bool]]:
    """The whole event sequence, numbered; `is_token` marks the events the token delay follows."""
    items = output_items(reply, ids, include)
    start = response_object(
        body, response_id=ids.response, created_at=created_at, status="in_progress", output=[], usage=None
    )
    sequence = 0

    def numbered(event: dict[str, Any]) -> dict[str, Any]:
        nonlocal sequence
        event = {"type": event["type"], "sequence_number": sequence, **event}
        sequence += 1
        return event

    yield numbered({"type": "response.created", "response": start}), False
    yield numbered({"type": "response.in_progress", "response": start}), False
    for index, item in enumerate(items):
        for event, is_token in _item_events(item, index):
            yield numbered(event), is_token
    status = "incomplete" if reply.truncated else "completed"
    final = response_object(
        body,
        response_id=ids.response,
        created_at=created_at,
        status=status,
        output=items,
        usage=reply.usage,
    )
    yield numbered({"type": f"response.{status}", "response": final}), False
