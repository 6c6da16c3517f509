"""Builders of output items (and their content parts) as they appear in `response.output` and events.

Invariant: each call returns a fresh dict (never shared), complete against the Open Responses
`ItemField` schema: every required key present, `status` one of in_progress|completed|incomplete.
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
