"""Checkpoints and sessions as JSON text, with the framework's own checkpoint encoding and its
restricted unpickler's allow-list.

Private names: ``agent_framework._workflows._checkpoint_encoding.encode_checkpoint_value`` /
``decode_checkpoint_value`` (only ``register_checkpoint_type`` is public in 1.23.0).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from agent_framework import WorkflowCheckpoint

# The framework's checkpoint value encoding (what ``FileCheckpointStorage`` uses).
from agent_framework._workflows._checkpoint_encoding import (
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
    """Serialize a checkpoint to JSON text exactly as ``FileCheckpointStorage`` encodes it."""
    return json.dumps(
        encode_checkpoint_value(checkpoint.to_dict()), ensure_ascii=False, separators=(",", ":")
    )


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


def encode_session(session: dict[str, Any]) -> str:
    """A plain agent's ``AgentSession.to_dict()`` as JSON text, with the checkpoint encoding (values
    that are not JSON are kept the way checkpoints keep them, and decoded through the same allow-list)."""
    return json.dumps(encode_checkpoint_value(session), ensure_ascii=False, separators=(",", ":"))


def decode_session(text: str, *, allowed_types: Iterable[str] = ()) -> dict[str, Any]:
    """The session dict of ``encode_session`` text, refusing types off the allow-list."""
    decoded = _decode_value(json.loads(text), allowed_types)
    if not isinstance(decoded, dict):
        raise WorkflowCheckpointException("Session text does not hold a session object.")
    return decoded
