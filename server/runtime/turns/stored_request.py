"""A create request as stored: its input items' ids assigned, its JSON, its hash and its input
item rows, each input item encoded once (`protocol.request.encode_items`).

Invariant: the stored form and the idempotency hash are those of one encoding, the text that
`CreateRequest.to_json` gives; a conversation's hand-added items and a turn re-pointed past a
rolled-back one reuse the client's items' JSON and keep the client's request's hash (a retry
is the client's request).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

from ...protocol.ids import input_item_id
from ...protocol.request import CreateRequest, encode_items
from ...protocol.sse import dumps
from ...store import InputItemRow


def _hash_of(request_json: str) -> str:
    return hashlib.sha256(request_json.encode()).hexdigest()


@dataclass(frozen=True)
class Encoded:
    """A create request as stored: input item ids assigned, its JSON, hash and input rows."""

    request: CreateRequest
    request_json: str
    request_hash: str
    input_rows: list[InputItemRow]
    # Each input item's JSON, as `request_json` and the rows hold it (None: encoded whole).
    items: list[bytes] | None = None


def encode(req: CreateRequest, rid: str) -> Encoded:
    """`req` as stored, its input items given ids (only the ids when it is not stored)."""
    encoded = dataclasses.replace(req, input_items=_ids(req.input_items, rid))
    if not req.store:
        return Encoded(encoded, "", "", [])  # never stored: only its ids are needed
    return stored(encoded, encode_items(encoded.input_items), None)


def stored(req: CreateRequest, items: list[bytes] | None, request_hash: str | None) -> Encoded:
    """`req` (its input items' ids assigned) as stored, each input item encoded once: `items`,
    their JSON (None: encoded whole, `encode_items`); `request_hash`: the client's request's
    (None: this one's)."""
    inputs = req.input_items
    if items is None:
        request_json = req.to_json()
        rows = [InputItemRow(i, item["id"], dumps(item)) for i, item in enumerate(inputs)]
    else:
        request_json = req.to_json(items)
        rows = [
            InputItemRow(i, item["id"], data.decode())
            for i, (item, data) in enumerate(zip(inputs, items, strict=True))
        ]
    return Encoded(req, request_json, request_hash or _hash_of(request_json), rows, items)


def with_added(encoded: Encoded, added: list[dict[str, Any]], rid: str) -> Encoded:
    """`encoded` with a conversation's hand-added items first (the client's hash kept)."""
    first = _ids(added, rid)
    req = dataclasses.replace(encoded.request, input_items=[*first, *encoded.request.input_items])
    more = encode_items(first) if encoded.items is not None else None
    items = None if more is None or encoded.items is None else [*more, *encoded.items]
    return stored(req, items, encoded.request_hash)


def _ids(items: list[dict[str, Any]], rid: str) -> list[dict[str, Any]]:
    """`items` (copies), each without an id given one by its position."""
    inputs = [dict(item) for item in items]
    for pos, item in enumerate(inputs):
        if not item.get("id"):
            item["id"] = input_item_id(rid, pos)
    return inputs
