"""Identifiers: minting response ids, validating client-supplied ids, deriving item ids.

Invariant: output and input item ids are pure functions of (response id, position), so a rerun
after a crash assigns exactly the ids the first run did; and every id accepted from a client is
drawn from a small safe alphabet with a bounded length, so it can be a database key or a log
field as is.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time

_RESPONSE_ID = re.compile(r"(?:resp_|caresp_)[A-Za-z0-9_-]{1,100}")
_CONVERSATION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_ITEM_PREFIX = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
    "mcp_approval_request": "mcpr",
    "mcp_call": "mcp",
}


def new_response_id() -> str:
    """A fresh response id: "resp_" and 48 lowercase hex characters: the creation time in
    milliseconds (12) and 144 random bits (36).

    Time first, so responses made at the same time sit side by side in every index keyed by
    response id (events, items, checkpoints): a commit of the tokens of 25 live streams then
    touches a few index pages instead of one per stream. Measured on SQLite (25 rows per commit,
    `synchronous=FULL`, 2,000 responses already stored): 0.35-0.38 ms of CPU per commit against
    0.72-0.84 with random ids, most of it the kernel's time to write and sync the pages.
    """
    return f"resp_{time.time_ns() // 1_000_000:012x}{secrets.token_hex(18)}"


def is_valid_response_id(value: str) -> bool:
    """Ours ("resp_") or a Foundry client-chosen one ("caresp_"), at most 128 characters."""
    return isinstance(value, str) and len(value) <= 128 and _RESPONSE_ID.fullmatch(value) is not None


def is_valid_conversation_id(value: str) -> bool:
    # Foundry conversation ids have no fixed prefix: accept any safe token.
    return isinstance(value, str) and _CONVERSATION_ID.fullmatch(value) is not None


def is_valid_user_id(value: str) -> bool:
    """1 to 256 printable characters: a tenant key must never smuggle control characters."""
    return isinstance(value, str) and 1 <= len(value) <= 256 and value.isprintable()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def output_item_id(response_id: str, output_index: int, kind: str) -> str:
    """Deterministic id of the output item at `output_index` (prefix by kind: msg, fc, rs, item)."""
    prefix = _ITEM_PREFIX.get(kind, "item")
    return f"{prefix}_{_digest(f'{response_id}:{output_index}')}"


MAX_IDEMPOTENCY_KEY = 255


def is_valid_idempotency_key(value: str) -> bool:
    """1 to 255 printable characters (the IETF `Idempotency-Key` header's value)."""
    return isinstance(value, str) and 1 <= len(value) <= MAX_IDEMPOTENCY_KEY and value.isprintable()


def idempotent_response_id(user_id: str, key: str) -> str:
    """The response id an `Idempotency-Key` stands for: the same for the same user and key, and
    another user's same key names another response (a key never reveals someone else's)."""
    return "resp_idem_" + hashlib.sha256(f"{user_id}\x00{key}".encode()).hexdigest()[:48]


def input_item_id(response_id: str, position: int) -> str:
    """Deterministic id for the input item at `position` when the client supplied none."""
    return f"in_{_digest(f'{response_id}:input:{position}')}"
