"""Checkpoints and sessions as JSON text, with the framework's own checkpoint encoding and its
restricted unpickler's allow-list.

Private names: ``agent_framework._workflows._checkpoint_encoding.encode_checkpoint_value`` /
``decode_checkpoint_value`` (only ``register_checkpoint_type`` is public in 1.23.0), and the two
keys its encoding marks a pickled value with (``_PICKLE_MARKER``, ``_TYPE_MARKER``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

import orjson
from agent_framework import WorkflowCheckpoint

# The framework's checkpoint value encoding (what ``FileCheckpointStorage`` uses).
from agent_framework._workflows._checkpoint_encoding import (
    _PICKLE_MARKER,
    _TYPE_MARKER,
    decode_checkpoint_value,
    encode_checkpoint_value,
)
from agent_framework.exceptions import WorkflowCheckpointException

__all__ = [
    "ALLOW_TYPES_ENV",
    "ALLOW_TYPE_FLAG",
    "ALWAYS_ALLOWED_TYPES",
    "CheckpointTypeRefused",
    "decode_checkpoint",
    "decode_session",
    "encode_checkpoint",
    "encode_session",
    "pickled_type_names",
    "refused_type_names",
]

# Admitted in every checkpoint beyond the framework's own allow-list: `list[Message]` and other
# builtin generics pickle as `types.GenericAlias` (a class, built from parts the allow-list
# checks itself); the official Handoff orchestration checkpoints one as its pending request's
# response type. `allowed_types` admits classes only, so no callable can come in this way.
ALWAYS_ALLOWED_TYPES: frozenset[str] = frozenset({"types:GenericAlias"})

ALLOW_TYPE_FLAG = "--allow-checkpoint-type"
ALLOW_TYPES_ENV = "DURABLE_RESPONSES_CHECKPOINT_TYPES"


class CheckpointTypeRefused(Exception):
    """A checkpoint holds a value whose type is not on the checkpoint allow-list (fail closed)."""

    def __init__(self, type_name: str, detail: str = "") -> None:
        self.type_name = type_name
        message = (
            f"Checkpoint refused: it contains a value of type '{type_name}', which is not on the "
            "checkpoint type allow-list (agent_framework.*, agent_framework_orchestrations.*, "
            "openai.types.*, builtin generics such as list[Message], safe built-ins). If this "
            f"type is trusted, allow it with '{ALLOW_TYPE_FLAG} {type_name}' or the environment "
            f"variable {ALLOW_TYPES_ENV} (comma-separated 'module:qualname' entries)."
        )
        if detail:
            message = f"{message} ({detail})"
        super().__init__(message)


# The restricted unpickler names the blocked global as "... type 'module:qualname'".
_BLOCKED_TYPE_RE = re.compile(r"blocked for (?:nested |non-type global )?(?:type )?'([^']+)'")


def _decode_value(raw: Any, allowed_types: Iterable[str]) -> Any:
    """``decode_checkpoint_value`` with the allow-list, a refused type raised as such."""
    try:
        return decode_checkpoint_value(raw, allowed_types=ALWAYS_ALLOWED_TYPES | frozenset(allowed_types))
    except WorkflowCheckpointException as exc:
        detail = " ".join(str(e) for e in (exc, exc.__cause__) if e is not None)
        match = _BLOCKED_TYPE_RE.search(detail)
        if match:
            raise CheckpointTypeRefused(match.group(1)) from exc
        raise


def encode_checkpoint(checkpoint: WorkflowCheckpoint) -> str:
    """Serialize a checkpoint to JSON text with ``FileCheckpointStorage``'s value encoding."""
    return _json_text(encode_value(checkpoint.to_dict()))


_NATIVE = (str, int, float, bool, type(None))
_MARKERS = frozenset({_PICKLE_MARKER, _TYPE_MARKER})


def encode_value(value: Any) -> Any:
    """``encode_checkpoint_value(value)``, its JSON part walked here: a plain dict whose keys are
    all ``str`` and none of the pickle markers has its values encoded, a plain list its items,
    a JSON value stays; any other value goes to the framework's encoding whole (what it pickles,
    a dict it pickles or whose keys it converts). Every superstep encodes a checkpoint, and the
    framework's walk (a list of key pairs, a set and a check per dict) took about as long as its
    pickling."""
    kind = type(value)
    if kind is dict:
        if all(type(k) is str for k in value) and _MARKERS.isdisjoint(value):
            return {k: v if type(v) in _NATIVE else encode_value(v) for k, v in value.items()}
    elif kind is list:
        return [v if type(v) in _NATIVE else encode_value(v) for v in value]
    elif kind in _NATIVE:
        return value
    return encode_checkpoint_value(value)


def _json_text(value: Any) -> str:
    """Compact JSON of an encoded checkpoint value, non-ASCII kept: orjson's text (every superstep
    saves one; of a 12 KB checkpoint orjson takes ~3 us, the standard encoder ~100 us), or the
    standard encoder's where orjson would change a value: it writes NaN and infinities as `null`
    (which `json` reads back as None: a text with `null` in it, as most checkpoints have, is
    checked for such a float) and refuses integers beyond 64 bits."""
    try:
        text = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _standard_json(value)
    if b"null" in text and _holds_non_finite(value):
        return _standard_json(value)
    return text.decode()


def _standard_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _holds_non_finite(value: Any) -> bool:
    """Whether an `encode_value` result holds a NaN or an infinity (its floats are in its JSON
    part: dicts, lists and native values only)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float and not math.isfinite(item):
            return True
    return False


def decode_checkpoint(text: str, *, allowed_types: Iterable[str] = ()) -> WorkflowCheckpoint:
    """Rebuild a checkpoint from ``encode_checkpoint`` text, refusing types off the allow-list.

    ``allowed_types`` extends the framework's allow-list with "module:qualname" entries.

    Raises:
        CheckpointTypeRefused: a value's type is not allowed.
        WorkflowCheckpointException: the text is not a valid checkpoint.
    """
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkflowCheckpointException(f"Checkpoint is not valid JSON: {exc}") from exc
    decoded = _decode_value(raw, allowed_types)
    if not isinstance(decoded, dict):
        raise WorkflowCheckpointException("Checkpoint text does not hold a checkpoint object.")
    return WorkflowCheckpoint.from_dict(decoded)


# A pickled value's type name as `_json_text` writes it (no space after the colon, either writer);
# a string holding the marker is escaped in JSON text, so only the encoding's own key matches.
_TYPE_NAME_RE = re.compile('"' + re.escape(_TYPE_MARKER) + r'":"([^"\\]+)"')


def pickled_type_names(text: str) -> set[str]:
    """The "module:qualname" of every value ``encode_checkpoint`` text holds pickled (the outer
    value's type; the classes inside it show only when it is decoded)."""
    return set(_TYPE_NAME_RE.findall(text))


def refused_type_names(text: str, *, allowed_types: Iterable[str] = ()) -> list[str]:
    """Every type ``decode_checkpoint(text, allowed_types=...)`` refuses, in the order it meets
    them (an empty list: the text decodes). Decodes once more per refused type."""
    refused: list[str] = []
    while True:
        try:
            decode_checkpoint(text, allowed_types=(*allowed_types, *refused))
        except CheckpointTypeRefused as exc:
            if exc.type_name in refused:
                return refused
            refused.append(exc.type_name)
        else:
            return refused


def encode_session(session: dict[str, Any]) -> str:
    """A plain agent's ``AgentSession.to_dict()`` as JSON text, with the checkpoint encoding (values
    that are not JSON are kept the way checkpoints keep them, and decoded through the same allow-list)."""
    return _json_text(encode_value(session))


def decode_session(text: str, *, allowed_types: Iterable[str] = ()) -> dict[str, Any]:
    """The session dict of ``encode_session`` text, refusing types off the allow-list."""
    decoded = _decode_value(json.loads(text), allowed_types)
    if not isinstance(decoded, dict):
        raise WorkflowCheckpointException("Session text does not hold a session object.")
    return decoded
