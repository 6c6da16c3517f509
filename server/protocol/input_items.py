"""Normalization of the `input` of a create request into a list of canonical input items.

Invariant: every item returned is a fresh dict with an explicit `"type"` and an `"id"` key (the
client's id, or None for the caller to fill with `ids.input_item_id`); message items always carry a
list of typed content parts and `"status": "completed"`; anything this layer does not understand is
refused with a 400 naming its path, never passed through silently (reasoning items excepted: they
are opaque to the host and kept as sent).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._check import (
    fail,
    json_copy,
    reject_unknown,
    require,
    want_enum,
    want_id,
    want_list,
    want_object,
    want_str,
)
from .content_parts import MAX_ITEM_ID_CHARS, MAX_TEXT_CHARS, content_part

MESSAGE_ROLES = ("user", "assistant", "system", "developer")
ITEM_STATUSES = ("in_progress", "completed", "incomplete")
FUNCTION_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")

# Allowed keys = the Open Responses schema's properties plus the openai SDK's for the same shape.
_MESSAGE_KEYS = frozenset({"type", "id", "role", "content", "status", "phase"})
_FUNCTION_CALL_KEYS = frozenset(
    {"type", "id", "call_id", "name", "arguments", "status", "namespace", "caller"}
)
_FUNCTION_CALL_OUTPUT_KEYS = frozenset(
    {"type", "id", "call_id", "output", "status", "name", "namespace", "caller"}
)
_ITEM_REFERENCE_KEYS = frozenset({"type", "id"})
_MCP_APPROVAL_RESPONSE_KEYS = frozenset({"type", "id", "approval_request_id", "approve", "reason"})
_MCP_APPROVAL_REQUEST_KEYS = frozenset({"type", "id", "name", "arguments", "server_label"})
_MCP_CALL_KEYS = frozenset(
    {"type", "id", "name", "arguments", "server_label", "output", "error", "status", "approval_request_id"}
)

_USER_PARTS = ("input_text", "input_image", "input_file")
# The SDK's EasyInputMessage lets an assistant turn carry input_text; accept it with the usual ones.
_ASSISTANT_PARTS = ("output_text", "refusal", "input_text")


def text_message(text: str, role: str = "user") -> dict[str, Any]:
    """The canonical message item for a plain string (the `input: "..."` shorthand)."""
    return {
        "type": "message",
        "id": None,
        "role": role,
        "content": [_text_part(text, role)],
        "status": "completed",
    }


def _text_part(text: str, role: str) -> dict[str, Any]:
    if role == "assistant":
        return {"type": "output_text", "text": text, "annotations": []}
    return {"type": "input_text", "text": text}


def normalize_input(value: object) -> list[dict[str, Any]]:
    """`input` (a string, a list of items, or a JSON object: a user message of its JSON text) as
    canonical items; [] for null."""
    if value is None:
        return []
    if isinstance(value, str):
        want_str(value, "input", max_len=MAX_TEXT_CHARS)
        return [text_message(value)]
    if isinstance(value, dict) and "type" not in value and "role" not in value:
        # A JSON object as the input (DevUI's form for a workflow that takes a structured
        # input): the user's message is its JSON text, which such a workflow parses.
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        want_str(text, "input", max_len=MAX_TEXT_CHARS)
        return [text_message(text)]
    items = want_list(value, "input")
    return [_item(raw, f"input[{i}]") for i, raw in enumerate(items)]


def _item_id(obj: dict[str, Any], path: str) -> str | None:
    value = obj.get("id")
    if value is None:
        return None
    return want_id(value, f"{path}.id", max_len=MAX_ITEM_ID_CHARS)


def _item(raw: object, path: str) -> dict[str, Any]:
    obj = want_object(raw, path)
    kind = obj.get("type")
    if kind is None:
        # EasyInputMessage has no type; a bare {"id": ...} is an item reference (its type is nullable).
        if "role" in obj:
            kind = "message"
        elif "id" in obj:
            kind = "item_reference"
        else:
            fail(f"Missing required parameter: '{path}.type'.", f"{path}.type", "missing_required_parameter")
    kind = want_str(kind, f"{path}.type")
    if kind == "message":
        return _message(obj, path)
    if kind == "function_call":
        return _function_call(obj, path)
    if kind == "function_call_output":
        return _function_call_output(obj, path)
    if kind == "item_reference":
        reject_unknown(obj, _ITEM_REFERENCE_KEYS, path)
        ref = want_id(require(obj, "id", path), f"{path}.id", max_len=MAX_ITEM_ID_CHARS)
        return {"type": "item_reference", "id": ref}
    if kind == "reasoning":
        kept = json_copy(obj)
        kept["id"] = _item_id(obj, path)
        return kept
    if kind == "mcp_approval_response":
        return _approval_response(obj, path)
    if kind == "mcp_approval_request":
        return _approval_request(obj, path)
    if kind == "mcp_call":
        return _mcp_call(obj, path)
    fail(f"Invalid value for '{path}.type': unsupported input item type {kind!r}.", f"{path}.type")


def _status(obj: dict[str, Any], path: str) -> str:
    value = obj.get("status")
    if value is None:
        return "completed"
    return want_enum(value, f"{path}.status", ITEM_STATUSES)


def _message(obj: dict[str, Any], path: str) -> dict[str, Any]:
    reject_unknown(obj, _MESSAGE_KEYS, path)
    role = want_enum(require(obj, "role", path), f"{path}.role", MESSAGE_ROLES)
    content = require(obj, "content", path)
    if isinstance(content, str):
        want_str(content, f"{path}.content", max_len=MAX_TEXT_CHARS)
        parts = [_text_part(content, role)]
    else:
        allowed = _ASSISTANT_PARTS if role == "assistant" else _USER_PARTS
        raw_parts = want_list(content, f"{path}.content")
        parts = [content_part(p, f"{path}.content[{j}]", allowed) for j, p in enumerate(raw_parts)]
    if obj.get("status") is not None:
        want_enum(obj["status"], f"{path}.status", ITEM_STATUSES)
    item: dict[str, Any] = {
        "type": "message",
        "id": _item_id(obj, path),
        "role": role,
        "content": parts,
        # An input message is complete by definition, whatever status the client echoed back.
        "status": "completed",
    }
    if obj.get("phase") is not None:
        item["phase"] = want_enum(obj["phase"], f"{path}.phase", ("commentary", "final_answer"))
    return item


def _call_id(obj: dict[str, Any], path: str) -> str:
    return want_id(require(obj, "call_id", path), f"{path}.call_id", max_len=64)


def _optional_extras(item: dict[str, Any], obj: dict[str, Any], path: str) -> dict[str, Any]:
    # Newer SDK fields for namespaced / programmatic tools: opaque to the host, kept as sent.
    if obj.get("namespace") is not None:
        item["namespace"] = want_str(obj["namespace"], f"{path}.namespace", max_len=256)
    if obj.get("caller") is not None:
        item["caller"] = json_copy(want_object(obj["caller"], f"{path}.caller"))
    return item


def _function_call(obj: dict[str, Any], path: str) -> dict[str, Any]:
    reject_unknown(obj, _FUNCTION_CALL_KEYS, path)
    call_id = _call_id(obj, path)
    name = want_str(require(obj, "name", path), f"{path}.name")
    if FUNCTION_NAME.fullmatch(name) is None:
        fail(
            f"Invalid '{path}.name': expected 1 to 64 characters of a-z, A-Z, 0-9, '_' or '-'.",
            f"{path}.name",
        )
    arguments = want_str(require(obj, "arguments", path), f"{path}.arguments", max_len=MAX_TEXT_CHARS)
    item = {
        "type": "function_call",
        "id": _item_id(obj, path),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": _status(obj, path),
    }
    return _optional_extras(item, obj, path)


def _function_call_output(obj: dict[str, Any], path: str) -> dict[str, Any]:
    reject_unknown(obj, _FUNCTION_CALL_OUTPUT_KEYS, path)
    call_id = _call_id(obj, path)
    output = require(obj, "output", path)
    if isinstance(output, str):
        want_str(output, f"{path}.output", max_len=MAX_TEXT_CHARS)
    else:
        parts = want_list(output, f"{path}.output")
        for j, part in enumerate(parts):
            content_part(part, f"{path}.output[{j}]", _USER_PARTS)
    item: dict[str, Any] = {
        "type": "function_call_output",
        "id": _item_id(obj, path),
        "call_id": call_id,
        # Kept exactly as sent: the tool's answer is the application's data, not ours to reshape.
        "output": json_copy(output),
        "status": _status(obj, path),
    }
    if obj.get("name") is not None:
        item["name"] = want_str(obj["name"], f"{path}.name", max_len=256)
    return _optional_extras(item, obj, path)


def _approval_response(obj: dict[str, Any], path: str) -> dict[str, Any]:
    """The client's answer to an `mcp_approval_request` output item (a tool waiting for approval)."""
    reject_unknown(obj, _MCP_APPROVAL_RESPONSE_KEYS, path)
    request_id = want_id(
        require(obj, "approval_request_id", path), f"{path}.approval_request_id", max_len=MAX_ITEM_ID_CHARS
    )
    approve = require(obj, "approve", path)
    if not isinstance(approve, bool):
        fail(f"Invalid type for '{path}.approve': expected a boolean.", f"{path}.approve", "invalid_type")
    item: dict[str, Any] = {
        "type": "mcp_approval_response",
        "id": _item_id(obj, path),
        "approval_request_id": request_id,
        "approve": approve,
    }
    if obj.get("reason") is not None:
        item["reason"] = want_str(obj["reason"], f"{path}.reason", max_len=MAX_TEXT_CHARS)
    return item


def _approval_request(obj: dict[str, Any], path: str) -> dict[str, Any]:
    """An earlier `mcp_approval_request` output item sent back as history: kept as sent."""
    reject_unknown(obj, _MCP_APPROVAL_REQUEST_KEYS, path)
    return {
        "type": "mcp_approval_request",
        "id": want_id(require(obj, "id", path), f"{path}.id", max_len=MAX_ITEM_ID_CHARS),
        "name": want_str(require(obj, "name", path), f"{path}.name", max_len=256),
        "arguments": want_str(require(obj, "arguments", path), f"{path}.arguments", max_len=MAX_TEXT_CHARS),
        "server_label": want_str(require(obj, "server_label", path), f"{path}.server_label", max_len=256),
    }


def _mcp_call(obj: dict[str, Any], path: str) -> dict[str, Any]:
    """An earlier `mcp_call` output item (a tool the server ran) sent back as history."""
    reject_unknown(obj, _MCP_CALL_KEYS, path)
    item = _approval_request({k: v for k, v in obj.items() if k in _MCP_APPROVAL_REQUEST_KEYS}, path)
    item["type"] = "mcp_call"
    if obj.get("output") is not None:
        item["output"] = want_str(obj["output"], f"{path}.output", max_len=MAX_TEXT_CHARS)
    if obj.get("error") is not None:
        item["error"] = json_copy(obj["error"])
    if obj.get("status") is not None:
        item["status"] = want_str(obj["status"], f"{path}.status", max_len=64)
    if obj.get("approval_request_id") is not None:
        item["approval_request_id"] = want_str(
            obj["approval_request_id"], f"{path}.approval_request_id", max_len=MAX_ITEM_ID_CHARS
        )
    return item
