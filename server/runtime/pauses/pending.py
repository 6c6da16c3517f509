"""Pending ``request_info`` requests as a client sees them: read out of checkpoints and calls.

Job: list a checkpoint's pending requests (ids, live data, JSON-friendly payloads, declared response
types) and render a ``request_info`` function call without the framework's internal request event.

Invariant: public agent-framework names only (``WorkflowCheckpoint.pending_request_info_events``,
``Content``, ``WorkflowAgent.REQUEST_INFO_FUNCTION_NAME``); the private ones stay in ``_af_private``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from agent_framework import Content, WorkflowAgent, WorkflowCheckpoint, WorkflowEvent

__all__ = [
    "clean_request_info_arguments",
    "json_friendly",
    "pending_request_data",
    "pending_request_ids",
    "pending_request_payloads",
    "pending_response_types",
    "request_info_data",
]


def json_friendly(value: Any) -> Any:
    """A JSON-serializable rendering of request data: primitives, dicts and lists as is (recursively),
    dataclasses and pydantic models as dicts, framework objects via ``to_dict()``, anything else ``str()``.
    """
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): json_friendly(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_friendly(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_friendly(dataclasses.asdict(value))
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        return json_friendly(model_dump(mode="json"))
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        try:
            return json_friendly(to_dict())
        except Exception:  # a to_dict that fails is no reason to lose the request
            return str(value)
    return str(value)


def pending_request_ids(checkpoint: WorkflowCheckpoint) -> list[str]:
    """Ids of the ``request_info`` requests still pending in ``checkpoint``, in insertion order."""
    return [str(event.request_id or key) for key, event in checkpoint.pending_request_info_events.items()]


def pending_request_data(checkpoint: WorkflowCheckpoint) -> dict[str, Any]:
    """Request id -> the live ``request_data`` of each pending request in ``checkpoint``."""
    return {
        str(event.request_id or key): event.data
        for key, event in checkpoint.pending_request_info_events.items()
    }


def pending_request_payloads(checkpoint: WorkflowCheckpoint) -> dict[str, Any]:
    """Request id -> JSON-friendly ``request_data`` of each pending request in ``checkpoint``."""
    return {
        str(event.request_id or key): json_friendly(event.data)
        for key, event in checkpoint.pending_request_info_events.items()
    }


def pending_response_types(checkpoint: WorkflowCheckpoint) -> dict[str, Any]:
    """Request id -> the ``response_type`` each pending request in ``checkpoint`` declared (or None)."""
    types: dict[str, Any] = {}
    for key, event in checkpoint.pending_request_info_events.items():
        try:
            response_type: Any = event.response_type
        except RuntimeError:  # a malformed event without one: nothing to convert to
            response_type = None
        types[str(event.request_id or key)] = response_type
    return types


def _request_info_parts(content: Content) -> tuple[str, Any]:
    """``(request_id, data)`` of a ``request_info`` function call: ``WorkflowAgent`` wraps each pending
    request as one, its arguments carrying the whole internal ``request_event`` (``data`` live)."""
    arguments: Any = content.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = {}
    args = arguments if isinstance(arguments, Mapping) else {}
    event = args.get("request_event")
    request_id = args.get("request_id") or content.call_id or ""
    if isinstance(event, WorkflowEvent):
        data: Any = event.data
    elif isinstance(event, Mapping):
        data = event.get("data")
    else:
        data = args.get("data")
    return str(request_id), data


def request_info_data(content: Content) -> Any:
    """The request's own data (the live object) of a ``request_info`` function call content."""
    return _request_info_parts(content)[1]


def clean_request_info_arguments(content: Content) -> tuple[str, str, str]:
    """``(call_id, name, arguments_json)`` for a function_call content, fit to show a client.

    A ``request_info`` call carries the whole internal ``request_event``; its arguments become
    ``{"request_id", "data"}`` only. Any other function call keeps its own arguments, rendered as a
    JSON string.
    """
    if content.type != "function_call":
        raise ValueError(f"Expected function_call content, got {content.type!r}.")
    call_id = content.call_id or ""
    name = content.name or ""
    arguments: Any = content.arguments
    if name == WorkflowAgent.REQUEST_INFO_FUNCTION_NAME:
        request_id, data = _request_info_parts(content)
        clean = {"request_id": request_id, "data": json_friendly(data)}
        return call_id or request_id, name, json.dumps(clean, ensure_ascii=False)
    if arguments is None:
        return call_id, name, "{}"
    if isinstance(arguments, str):
        return call_id, name, arguments
    return call_id, name, json.dumps(json_friendly(arguments), ensure_ascii=False)
