"""Builders of output items (and their content parts) as they appear in `response.output` and events.

Invariant: each call returns a fresh dict (never shared), complete against the Open Responses
`ItemField` schema (message, function_call, function_call_output, reasoning): every required
key present, `status` one of in_progress|completed|incomplete. `mcp_approval_request` and
`mcp_call` are not in that schema: they have the shape of OpenAI's Responses API items of those
names (what the openai SDKs and the Vercel AI SDK parse).
"""

from __future__ import annotations

from typing import Any

ITEM_STATUSES = frozenset({"in_progress", "completed", "incomplete"})


def _check_status(status: str) -> str:
    if status not in ITEM_STATUSES:
        raise ValueError(f"item status must be one of {sorted(ITEM_STATUSES)}, not {status!r}")
    return status


def output_text_part(text: str = "") -> dict[str, Any]:
    """An `output_text` content part (empty while it streams; the final text when done)."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(item_id: str, *, status: str, text: str | None = None) -> dict[str, Any]:
    """An assistant message; no content parts while `text` is None (as in `output_item.added`)."""
    return {
        "type": "message",
        "id": item_id,
        "status": _check_status(status),
        "role": "assistant",
        "content": [] if text is None else [output_text_part(text)],
    }


def function_call_item(
    item_id: str, *, call_id: str, name: str, arguments: str, status: str
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": _check_status(status),
    }


def function_call_output_item(item_id: str, *, call_id: str, output: str, status: str) -> dict[str, Any]:
    """The result of a tool the server ran itself (the client must not run it again)."""
    return {
        "type": "function_call_output",
        "id": item_id,
        "call_id": call_id,
        "output": output,
        "status": _check_status(status),
    }


def summary_text_part(text: str = "") -> dict[str, Any]:
    return {"type": "summary_text", "text": text}


def reasoning_item(item_id: str, *, status: str, summary: str | None = None) -> dict[str, Any]:
    """A model's reasoning, shown as its summary text (none while it streams)."""
    return {
        "type": "reasoning",
        "id": item_id,
        "status": _check_status(status),
        "summary": [] if summary is None else [summary_text_part(summary)],
    }


def mcp_approval_request_item(
    item_id: str, *, name: str, arguments: str, server_label: str
) -> dict[str, Any]:
    """A tool call that waits for the client's approval (`mcp_approval_response` answers `item_id`)."""
    return {
        "type": "mcp_approval_request",
        "id": item_id,
        "name": name,
        "arguments": arguments,
        "server_label": server_label,
    }


def mcp_call_item(
    item_id: str,
    *,
    name: str,
    arguments: str,
    server_label: str,
    status: str,
    output: str | None = None,
    error: str | None = None,
    approval_request_id: str | None = None,
) -> dict[str, Any]:
    """A tool the server ran itself (the client must not run it): OpenAI's `mcp_call` item.

    `status` is in_progress, completed, incomplete or failed (the tool raised: `error` says how,
    as OpenAI's `mcp_tool_execution_error`); `output` is the tool's result as text.
    """
    if status not in ITEM_STATUSES and status != "failed":
        raise ValueError(f"mcp_call status must be one of {sorted(ITEM_STATUSES)} or failed, not {status!r}")
    return {
        "type": "mcp_call",
        "id": item_id,
        "name": name,
        "arguments": arguments,
        "server_label": server_label,
        "status": status,
        "output": output,
        "error": None
        if error is None
        else {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": error}]},
        "approval_request_id": approval_request_id,
    }
