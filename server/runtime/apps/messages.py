"""Conversions between Responses protocol items and agent_framework types (pure functions, no I/O).

Job: turn normalized Responses input items and prior output items into ``Message`` lists an agent can
run on, and request ``tools`` into declaration-only ``FunctionTool`` objects.

Invariant: one protocol item becomes at most one ``Message`` and items keep their order (consecutive
items are never merged), so a history rebuilt from stored items is the same on every replay. Items that
carry no model input here (``item_reference``, which ``continuation.Continuations`` resolves into the
item it names before converting; ``reasoning``) are skipped.

A ``function_call_output`` answering a workflow's ``request_info`` carries a string on the wire, while
the request declared a ``response_type``: ``function_output_value`` turns the string into that type
(JSON for anything but text), or says why it cannot, before any run starts.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import mimetypes
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlparse

from agent_framework import Content, FunctionTool, Message

from .._af_private import coerce_request_response

__all__ = [
    "ReplyTypeError",
    "declaration_tools",
    "function_output_value",
    "input_items_to_messages",
    "output_items_to_messages",
    "type_name",
    "typed_result",
]

# Responses roles that agent_framework does not have map onto the closest one it does.
_ROLE_MAP = {"developer": "system"}
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_DEFAULT_IMAGE_MEDIA_TYPE = "image/*"


def _guess_media_type(url: str) -> str:
    """The media type of an image URL: from a data URL's header, else from the path's extension."""
    if url.startswith("data:"):
        header = url[5:].split(",", 1)[0]
        media_type = header.split(";", 1)[0]
        return media_type or _DEFAULT_IMAGE_MEDIA_TYPE
    guessed, _ = mimetypes.guess_type(urlparse(url).path)
    return guessed or _DEFAULT_IMAGE_MEDIA_TYPE


def _image_content(part: Mapping[str, Any]) -> Content | None:
    detail = part.get("detail")
    extra: dict[str, Any] | None = {"detail": detail} if detail else None
    url = part.get("image_url")
    if isinstance(url, Mapping):  # Chat Completions shape {"url": ..., "detail": ...}
        url = url.get("url")
    if isinstance(url, str) and url:
        return Content.from_uri(url, media_type=_guess_media_type(url), additional_properties=extra)
    file_id = part.get("file_id")
    if isinstance(file_id, str) and file_id:
        return Content.from_hosted_file(file_id, additional_properties=extra)
    return None


def _part_to_content(part: Any) -> Content | None:
    """One message content part as a ``Content``; unknown or empty parts give ``None``."""
    if isinstance(part, str):
        return Content.from_text(part)
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        return Content.from_text(str(part.get("text", "")))
    if kind == "refusal":
        return Content.from_text(str(part.get("refusal", "")))
    if kind == "input_image":
        return _image_content(part)
    if kind == "input_file":
        file_id = part.get("file_id")
        if isinstance(file_id, str) and file_id:
            return Content.from_hosted_file(file_id, name=part.get("filename"))
        file_data = part.get("file_data")
        if isinstance(file_data, str) and file_data.startswith("data:"):
            return Content.from_uri(
                file_data, media_type=_guess_media_type(file_data), name=part.get("filename")
            )
        file_url = part.get("file_url")
        if isinstance(file_url, str) and file_url:
            return Content.from_uri(
                file_url, media_type=_guess_media_type(file_url), name=part.get("filename")
            )
    return None


def _message_contents(content: Any) -> list[Content]:
    if isinstance(content, str):
        return [Content.from_text(content)]
    if not isinstance(content, Iterable):
        return []
    converted = (_part_to_content(part) for part in content)
    return [c for c in converted if c is not None]


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def _function_output(output: Any) -> Any:
    """A function_call_output's ``output``: a string as is, a list of content parts as ``Content``s."""
    if isinstance(output, list):
        return _message_contents(output)
    return output


class ReplyTypeError(ValueError):
    """A function_call_output cannot become the value its request declared (the message says why)."""


def type_name(response_type: Any) -> str:
    """A readable name of a declared type: ``int``, ``Ticket``, ``list[int]``."""
    if isinstance(response_type, type):
        return response_type.__qualname__
    return str(response_type).replace("typing.", "")


def _expected_json(response_type: Any) -> str:
    """What a client must send for ``response_type``, in words."""
    if response_type is str:
        return "text"
    if response_type is bool:
        return "the JSON boolean true or false"
    if response_type is int:
        return 'a JSON integer, e.g. "3"'
    if response_type is float:
        return 'a JSON number, e.g. "2.5"'
    if isinstance(response_type, type) and dataclasses.is_dataclass(response_type):
        names = [f.name for f in dataclasses.fields(response_type) if f.init]
        return f"a JSON object with the fields {', '.join(names)}"
    fields = getattr(response_type, "model_fields", None)
    if isinstance(response_type, type) and isinstance(fields, Mapping):
        return f"a JSON object with the fields {', '.join(str(k) for k in fields)}"
    if isinstance(response_type, type) and issubclass(response_type, enum.Enum):
        values = ", ".join(json.dumps(m.value) for m in response_type)
        return f"one of the JSON values {values}"
    return f"the JSON encoding of a {type_name(response_type)}"


def _parts_text(output: list[Any]) -> str | None:
    """The text of a list of content parts when every part is text, else None."""
    texts: list[str] = []
    for part in output:
        if not isinstance(part, Mapping) or part.get("type") not in ("input_text", "output_text", "text"):
            return None
        texts.append(str(part.get("text", "")))
    return "".join(texts)


def function_output_value(output: Any, response_type: Any) -> Any:
    """A function_call_output's ``output`` as the ``response_type`` its ``request_info`` declared.

    Text (a string, or content parts that are all text) is kept as is when the type takes a string;
    otherwise it must be JSON that converts to the type (``int``, ``float``, ``bool``, lists, dicts,
    dataclasses by their fields, pydantic models via ``model_validate``, enums by value). Content
    parts stay ``Content``s when that is what the type takes. ``None`` (no declared type) and
    ``Content`` (the framework answers tool calls with the whole function result) leave the output
    as ``input_items_to_messages`` converts it.

    Raises:
        ReplyTypeError: the output cannot become a ``response_type``; says what was expected.
    """
    if response_type is None or response_type is Content:
        return _function_output(output)
    expected = _expected_json(response_type)
    if isinstance(output, list):
        contents = _message_contents(output)
        if _accepts(contents, response_type):
            return contents
        text = _parts_text(output)
        if text is None:
            sent_as = "" if response_type is str else " as a string (or text parts)"
            raise ReplyTypeError(
                f"expected {expected}{sent_as}; non-text content parts cannot become a "
                f"{type_name(response_type)}"
            )
        output = text
    if not isinstance(output, str):
        raise ReplyTypeError(f"expected {expected} as a string")
    if _accepts(output, response_type):
        return output
    is_enum = isinstance(response_type, type) and issubclass(response_type, enum.Enum)
    if is_enum:
        try:  # an enum's string value may come bare ("red") as well as JSON ('"red"', "2")
            return response_type(output)
        except (ValueError, TypeError):
            pass
    try:
        value = json.loads(output)
    except ValueError:
        raise ReplyTypeError(f"expected {expected}; {_preview(output)} is not valid JSON") from None
    if is_enum:
        try:
            return response_type(value)
        except (ValueError, TypeError):
            raise ReplyTypeError(f"expected {expected}; got {_preview(output)}") from None
    try:
        return coerce_request_response(value, response_type)
    except TypeError as exc:
        detail = f" ({exc})" if str(exc) else ""
        raise ReplyTypeError(f"expected {expected}; got {_preview(output)}{detail}") from None


def _accepts(value: Any, response_type: Any) -> bool:
    try:
        coerce_request_response(value, response_type)
    except TypeError:
        return False
    return True


def _preview(text: str, limit: int = 80) -> str:
    shown = text if len(text) <= limit else text[:limit] + "..."
    return json.dumps(shown, ensure_ascii=False)


def _item_to_message(
    item: Mapping[str, Any],
    *,
    force_role: str | None = None,
    results: Mapping[str, Any] | None = None,
) -> Message | None:
    kind = item.get("type", "message" if "role" in item else None)
    item_id = item.get("id") if isinstance(item.get("id"), str) else None
    if kind == "message":
        role = force_role or str(item.get("role", "user"))
        return Message(
            role=_ROLE_MAP.get(role, role),
            contents=_message_contents(item.get("content")),
            message_id=item_id,
        )
    if kind == "function_call":
        call = Content.from_function_call(
            call_id=str(item.get("call_id", "")),
            name=str(item.get("name", "")),
            arguments=_arguments_text(item.get("arguments")),
        )
        return Message(role="assistant", contents=[call], message_id=item_id)
    if kind == "function_call_output":
        call_id = str(item.get("call_id", ""))
        result = Content.from_function_result(call_id=call_id, result=_function_output(item.get("output")))
        if results is not None and call_id in results:
            # `from_function_result` keeps only text in `result` (its `items` keep the parts); a
            # workflow hands `result` to the request as the reply, so the typed value goes there.
            result = typed_result(call_id, results[call_id], result.items)
        return Message(role="tool", contents=[result], message_id=item_id)
    # item_reference (resolved by the caller), reasoning and other items carry no input here.
    return None


def input_items_to_messages(
    items: list[dict[str, Any]], *, results: Mapping[str, Any] | None = None
) -> list[Message]:
    """Normalized Responses input items -> messages, one per item, in order (see module docstring).

    ``results`` (call id -> value) replaces the ``output`` of those calls' function_call_output
    items: the typed replies ``function_output_value`` made for a paused workflow's requests.
    """
    messages: list[Message] = []
    for item in items:
        if item.get("type") == "mcp_call":
            messages.extend(_ran_tool_messages(item))
            continue
        message = _item_to_message(item, results=results)
        if message is not None:
            messages.append(message)
    return messages


def _ran_tool_messages(item: Mapping[str, Any]) -> list[Message]:
    """An `mcp_call` item (a tool the server ran) as the call and its result, as the model saw them
    (the item's id stands for the call's id)."""
    call_id = str(item.get("id", ""))
    call = Content.from_function_call(
        call_id=call_id, name=str(item.get("name", "")), arguments=_arguments_text(item.get("arguments"))
    )
    output = item.get("output")
    result = Content.from_function_result(call_id=call_id, result=output if isinstance(output, str) else "")
    return [Message(role="assistant", contents=[call]), Message(role="tool", contents=[result])]


def output_items_to_messages(items: list[dict[str, Any]]) -> list[Message]:
    """A prior turn's output items -> assistant messages (text messages and function calls), in order."""
    messages: list[Message] = []
    for item in items:
        kind = item.get("type")
        if kind == "message":
            message = _item_to_message(item, force_role="assistant")
        elif kind in ("function_call", "function_call_output"):
            message = _item_to_message(item)
        elif kind == "mcp_call":
            messages.extend(_ran_tool_messages(item))
            continue
        else:
            message = None
        if message is not None:
            messages.append(message)
    return messages


def declaration_tools(tools: list[dict[str, Any]]) -> list[FunctionTool]:
    """Request ``tools`` of type "function" as declaration-only tools; other tool types are ignored.

    A declaration-only ``FunctionTool`` (``func=None``) is sent to the model like any function tool,
    but agent_framework never executes it: a call to it comes back to the caller to answer.
    """
    declared: list[FunctionTool] = []
    for tool in tools:
        if tool.get("type") != "function":
            continue
        # Responses shape is flat; the Chat Completions shape nests under "function".
        nested = tool.get("function")
        spec: Mapping[str, Any] = nested if isinstance(nested, Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            continue
        parameters = spec.get("parameters")
        schema = dict(parameters) if isinstance(parameters, Mapping) else dict(_EMPTY_SCHEMA)
        declared.append(
            FunctionTool(
                name=name,
                description=str(spec.get("description") or ""),
                input_model=schema,
                func=None,
            )
        )
    return declared


def typed_result(call_id: str, value: Any, items: Any) -> Content:
    """A function result whose `result` is `value` itself, built at once: `from_function_result`
    keeps text only in `result`, and a workflow hands `result` to its request as the reply
    (`items`, the parts a client is shown, come from `from_function_result`)."""
    return Content("function_result", call_id=call_id, result=value, items=items)
