"""The Conversations API's wire format: request bodies, query parameters and the objects returned.

Invariant: pure (no I/O). Every body parsed here satisfied OpenAI's rules for it or raised a
400 naming the parameter (items: 1 to 20 per call, canonical input items, no item_reference;
metadata: at most 16 pairs, as on a response); every object rendered has the fields the openai
SDKs' `Conversation`, `ConversationDeletedResource`, `ConversationItem` and
`ConversationItemList` types require.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._check import fail, reject_unknown, want_list, want_object, want_str
from .input_items import normalize_input
from .query import parse_list_params
from .request import parse_metadata

MAX_ITEMS_PER_CALL = 20
_ID_PREFIX = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
    "mcp_approval_request": "mcpr",
    "mcp_approval_response": "mcpa",
    "mcp_call": "mcp",
}

Order = Literal["asc", "desc"]


def new_conversation_id() -> str:
    """A fresh conversation id: "conv_" and 48 lowercase hex characters (192 random bits)."""
    return "conv_" + secrets.token_hex(24)


def new_item_id(kind: str) -> str:
    """A fresh id for an item added by hand (prefix by kind, as output items have)."""
    return f"{_ID_PREFIX.get(kind, 'item')}_{secrets.token_hex(24)}"


@dataclass(frozen=True)
class ItemListParams:
    after: str | None = None
    limit: int = 20
    order: Order = "desc"
    include: tuple[str, ...] = ()


def _items(value: object, param: str, *, required: bool) -> list[dict[str, Any]]:
    if value is None:
        if required:
            fail(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")
        return []
    raw = want_list(value, param)
    if required and not raw:
        fail(f"'{param}' must hold at least one item.", param, "empty_array")
    if len(raw) > MAX_ITEMS_PER_CALL:
        fail(
            f"Invalid '{param}': at most {MAX_ITEMS_PER_CALL} items can be added at a time, got {len(raw)}.",
            param,
            "array_above_max_length",
        )
    items = normalize_input(raw)
    for pos, item in enumerate(items):
        if item.get("type") == "item_reference":
            fail(
                f"Invalid '{param}[{pos}]': an item_reference cannot be added to a conversation.",
                f"{param}[{pos}]",
            )
        if not item.get("id"):
            item["id"] = new_item_id(str(item.get("type")))
    return items


def parse_conversation_create(body: object) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """`POST /conversations`: (metadata, items), the items with ids assigned."""
    obj = want_object(body if body is not None else {}, "body")
    reject_unknown(obj, frozenset({"items", "metadata"}), "body")
    return parse_metadata(obj.get("metadata")), _items(obj.get("items"), "items", required=False)


def parse_conversation_update(body: object) -> dict[str, str]:
    """`POST /conversations/{id}`: the new metadata (it replaces the old)."""
    obj = want_object(body, "body")
    reject_unknown(obj, frozenset({"metadata"}), "body")
    if "metadata" not in obj:
        fail("Missing required parameter: 'metadata'.", "metadata", "missing_required_parameter")
    return parse_metadata(obj["metadata"])


def parse_items_create(body: object) -> list[dict[str, Any]]:
    """`POST /conversations/{id}/items`: 1 to 20 items, ids assigned."""
    obj = want_object(body, "body")
    reject_unknown(obj, frozenset({"items"}), "body")
    return _items(obj.get("items"), "items", required=True)


def parse_item_list_params(query: Mapping[str, str], include: Sequence[str] = ()) -> ItemListParams:
    """`?after=&limit=&order=&include=` of `GET /conversations/{id}/items` (default order desc)."""
    base = parse_list_params(query)
    if query.get("before"):
        fail("Unknown parameter: 'before' (page with 'after' and 'order').", "before", "unknown_parameter")
    for i, value in enumerate(include):
        want_str(value, f"include[{i}]", max_len=256, min_len=1)
    order: Order = "asc" if base.order == "asc" else "desc"
    return ItemListParams(after=base.after, limit=base.limit, order=order, include=tuple(include))


def conversation_body(conversation_id: str, created_at: float, metadata: Mapping[str, str]) -> dict[str, Any]:
    return {
        "id": conversation_id,
        "object": "conversation",
        "created_at": int(created_at),
        "metadata": dict(metadata),
    }


def conversation_deleted_body(conversation_id: str) -> dict[str, Any]:
    return {"id": conversation_id, "object": "conversation.deleted", "deleted": True}


def conversation_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A stored input or output item as a conversation item (every item has an id and a status)."""
    out = dict(item)
    if out.get("type") in ("message", "function_call", "function_call_output") and not out.get("status"):
        out["status"] = "completed"
    return out


def item_list_body(items: list[dict[str, Any]], *, has_more: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": has_more,
    }
