"""The digest of a call's input: a record replays only for a call with the same input.

Two runs of the same call differ in ids the framework or the service makes fresh (a tool
result's occurrence id `af-call-...`, message and response ids, times) and in raw provider
objects; those are left out (`_VOLATILE`). A call is still told apart by its place (the n-th
model call of its executor, a tool's `call_id`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import Content
from pydantic import BaseModel

__all__ = ["model_digest", "tool_digest"]

_SIMPLE = (str, int, float, bool)
_VOLATILE = frozenset(
    {
        "additional_properties",
        "raw_representation",
        "message_id",
        "response_id",
        "created_at",
        "annotations",
        "id",
    }
)


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, Content):
        # Its fields that have a value, whichever way it was made (streamed live with its raw
        # chunk, or read back from a checkpoint or a record without it).
        return {
            k: _canonical(v)
            for k, v in vars(value).items()
            if k not in _VOLATILE and v is not None and v is not False and v != {} and v != []
        }
    if isinstance(value, BaseModel):
        return _canonical(value.model_dump(mode="json"))
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return _canonical(value.to_dict())
    if value is None or isinstance(value, _SIMPLE):
        return value
    return repr(value)


def _hash(value: Any) -> str:
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def model_digest(messages: Sequence[Any], options: Mapping[str, Any] | None) -> str:
    opts = options or {}
    tools = sorted(str(getattr(t, "name", t)) for t in (opts.get("tools") or ()))
    return _hash(
        {
            "messages": [
                {"role": str(getattr(m, "role", "")), "contents": list(getattr(m, "contents", ()))}
                for m in messages
            ],
            "instructions": opts.get("instructions"),
            "tools": tools,
        }
    )


def tool_digest(name: str, arguments: Any) -> str:
    return _hash({"name": name, "arguments": arguments})
