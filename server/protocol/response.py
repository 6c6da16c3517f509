"""The Response object and the other JSON bodies of the `/responses` routes.

Invariant: `build_response` always returns every one of the 31 fields the Open Responses
`ResponseResource` schema requires (null ones included), derived only from its arguments, so the
same stored request and state always render the same Response.
"""

from __future__ import annotations

import copy
from typing import Any

from .request import CreateRequest

RESPONSE_STATUSES = frozenset({"queued", "in_progress", "completed", "failed", "cancelled", "incomplete"})


def usage(
    input_tokens: int = 0, output_tokens: int = 0, *, cached_tokens: int = 0, reasoning_tokens: int = 0
) -> dict[str, Any]:
    """A complete usage object (the schema requires both `*_details` objects)."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        # `cache_write_tokens` is not in the Open Responses schema (extra keys are allowed) but the
        # openai SDK's `ResponseUsage` requires it.
        "input_tokens_details": {"cached_tokens": cached_tokens, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
    }


def _copy(value: Any) -> Any:
    """A deep copy of a request's or a state's value; None and empty ones (most of them, in
    most responses) without the copy module's walk: a Response is built several times per response."""
    if value is None or type(value) is str:
        return value
    if not value and type(value) in (list, dict):
        return type(value)()
    return copy.deepcopy(value)


def _text_field(text: dict[str, Any] | None) -> dict[str, Any]:
    field = copy.deepcopy(text) if text else {}
    if field.get("format") is None:
        field["format"] = {"type": "text"}
    elif field["format"].get("type") == "json_schema":
        # The Response schema requires these keys on a json_schema format; the request may omit them.
        field["format"].setdefault("description", None)
        field["format"].setdefault("strict", False)
    return field


def _reasoning_field(reasoning: dict[str, Any] | None) -> dict[str, Any] | None:
    if reasoning is None:
        return None
    field = copy.deepcopy(reasoning)
    field.setdefault("effort", None)
    field.setdefault("summary", None)
    return field


def build_response(
    req: CreateRequest,
    *,
    response_id: str,
    status: str,
    created_at: int,
    completed_at: int | None = None,
    output: list[dict[str, Any]] | None = None,
    error: dict[str, Any] | None = None,
    incomplete_details: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
    conversation_id: str | None = None,
) -> dict[str, Any]:
    """The Response object for `req` in the given state.

    `usage` None renders as null, except for a `completed` response, which always reports usage
    (zeros when unknown). `conversation_id` defaults to the request's. `model` is the request's
    model, or "" when it named none (an agent host does not always have one).
    """
    if status not in RESPONSE_STATUSES:
        raise ValueError(f"response status must be one of {sorted(RESPONSE_STATUSES)}, not {status!r}")
    if usage is None and status == "completed":
        usage = _zero_usage()
    conversation = conversation_id if conversation_id is not None else req.conversation_id
    service_tier = req.service_tier if req.service_tier not in (None, "auto") else "default"
    body: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "completed_at": completed_at,
        "status": status,
        "incomplete_details": _copy(incomplete_details),
        "model": req.model or "",
        "previous_response_id": req.previous_response_id,
        "instructions": req.instructions,
        # A shallow copy: output items are final (closed) dicts nobody changes; copying them
        # deeply was a measurable share of the end of a long response.
        "output": list(output) if output is not None else [],
        "error": _copy(error),
        "tools": _copy(req.tools),
        "tool_choice": _copy(req.tool_choice),
        "truncation": req.truncation,
        "parallel_tool_calls": req.parallel_tool_calls,
        "text": _text_field(req.text),
        "top_p": req.top_p if req.top_p is not None else 1.0,
        "presence_penalty": req.presence_penalty if req.presence_penalty is not None else 0.0,
        "frequency_penalty": req.frequency_penalty if req.frequency_penalty is not None else 0.0,
        "top_logprobs": req.top_logprobs if req.top_logprobs is not None else 0,
        "temperature": req.temperature if req.temperature is not None else 1.0,
        "reasoning": _reasoning_field(req.reasoning),
        "usage": _copy(usage),
        "max_output_tokens": req.max_output_tokens,
        "max_tool_calls": req.max_tool_calls,
        "store": req.store,
        "background": req.background,
        "service_tier": service_tier,
        "metadata": dict(req.metadata),
        "safety_identifier": req.safety_identifier,
        "prompt_cache_key": req.prompt_cache_key,
    }
    if conversation is not None:
        body["conversation"] = {"id": conversation}
    if req.agent_reference is not None:
        body["agent_reference"] = _copy(req.agent_reference)
    if req.agent_session_id is not None:
        body["agent_session_id"] = req.agent_session_id
    return body


def _zero_usage() -> dict[str, Any]:
    return usage(0, 0)


def deleted_body(response_id: str) -> dict[str, Any]:
    """The body of `DELETE /responses/{id}`."""
    return {"id": response_id, "object": "response", "deleted": True}


def list_body(items: list[dict[str, Any]], *, has_more: bool) -> dict[str, Any]:
    """An OpenAI list page (`GET /responses/{id}/input_items`); first/last ids null when empty."""
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": has_more,
    }
