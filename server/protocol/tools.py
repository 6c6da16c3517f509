"""The `tools` and `tool_choice` of a create request, parsed and normalized.

Invariant: a function tool comes out with every field the Response schema names (`description`,
`parameters`, `strict`: None when not given); any other tool kind is echoed back untouched (it
means nothing to an agent host). Anything refused raises a 400 `ProtocolError` naming the field.
"""

from __future__ import annotations

from typing import Any

from ._check import (
    fail,
    json_copy,
    reject_unknown,
    require,
    want_bool,
    want_enum,
    want_list,
    want_object,
    want_str,
)
from .content_parts import MAX_TEXT_CHARS
from .input_items import FUNCTION_NAME

TOOL_CHOICE_VALUES = ("none", "auto", "required")
_FUNCTION_TOOL_KEYS = frozenset(
    {
        "type",
        "name",
        "description",
        "parameters",
        "strict",
        "allowed_callers",
        "defer_loading",
        "output_schema",
    }
)


def parse_tools(value: object) -> list[dict[str, Any]]:
    if value is None:
        return []
    tools = want_list(value, "tools")
    return [_tool(t, f"tools[{i}]") for i, t in enumerate(tools)]


def _tool(raw: object, path: str) -> dict[str, Any]:
    obj = want_object(raw, path)
    kind = want_str(require(obj, "type", path), f"{path}.type", min_len=1, max_len=128)
    if kind != "function":
        # Hosted tool kinds mean nothing to an agent host; echo them back untouched.
        return json_copy(obj)
    reject_unknown(obj, _FUNCTION_TOOL_KEYS, path)
    name = want_str(require(obj, "name", path), f"{path}.name")
    if FUNCTION_NAME.fullmatch(name) is None:
        fail(
            f"Invalid '{path}.name': expected 1 to 64 characters of a-z, A-Z, 0-9, '_' or '-'.",
            f"{path}.name",
        )
    tool: dict[str, Any] = {
        "type": "function",
        "name": name,
        "description": None,
        "parameters": None,
        "strict": None,
    }
    if obj.get("description") is not None:
        tool["description"] = want_str(obj["description"], f"{path}.description", max_len=MAX_TEXT_CHARS)
    if obj.get("parameters") is not None:
        tool["parameters"] = json_copy(want_object(obj["parameters"], f"{path}.parameters"))
    if obj.get("strict") is not None:
        tool["strict"] = want_bool(obj["strict"], f"{path}.strict")
    for extra in ("allowed_callers", "defer_loading", "output_schema"):
        if obj.get(extra) is not None:
            tool[extra] = json_copy(obj[extra])
    return tool


def parse_tool_choice(value: object) -> Any:
    if value is None:
        return "auto"
    if isinstance(value, str):
        return want_enum(value, "tool_choice", TOOL_CHOICE_VALUES)
    if not isinstance(value, dict):
        fail(
            "Invalid 'tool_choice': expected 'none', 'auto', 'required' or an object with a 'type'.",
            "tool_choice",
            "invalid_type",
        )
    choice = json_copy(value)
    kind = want_str(require(choice, "type", "tool_choice"), "tool_choice.type", min_len=1, max_len=128)
    if kind == "function":
        want_str(require(choice, "name", "tool_choice"), "tool_choice.name", min_len=1, max_len=64)
    elif kind == "allowed_tools":
        allowed = want_list(require(choice, "tools", "tool_choice"), "tool_choice.tools")
        for i, entry in enumerate(allowed):
            want_str(
                require(want_object(entry, f"tool_choice.tools[{i}]"), "type", f"tool_choice.tools[{i}]"),
                f"tool_choice.tools[{i}].type",
            )
        # The Response schema requires `mode`; the request's default is "auto".
        choice["mode"] = want_enum(choice.get("mode", "auto"), "tool_choice.mode", TOOL_CHOICE_VALUES)
    return choice
