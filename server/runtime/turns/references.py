"""Item references: an `item_reference` input item replaced by the stored item it names.

Invariant: a reference resolves only to an item of the same user's stored responses; a stored
item_reference (an earlier request's input kept as sent) is a copy, never the item itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...protocol import errors
from ...store import Store

# Stored items read per item_reference (the item itself comes first; copies of it follow).
MAX_REFERENCE_CANDIDATES = 8


async def resolve_references(
    store: Store, user_id: str, items: Sequence[dict[str, Any]], *, strict: bool
) -> list[dict[str, Any]]:
    """`items` with each item_reference replaced by the stored item it names (of this user).

    A stored item_reference (an earlier request's input, kept as sent under the id it names) is
    a copy, never the item itself: the first stored item of another type is taken.
    strict: an unknown id is a 404 (creation); otherwise the reference is dropped (recovery
    and history, where the referenced response may have been deleted since).
    """
    if not any(i.get("type") == "item_reference" for i in items):
        return list(items)
    out: list[dict[str, Any]] = []
    for pos, item in enumerate(items):
        if item.get("type") != "item_reference":
            out.append(item)
            continue
        ref = str(item.get("id"))
        found = None
        for data in await store.find_items(user_id, ref, limit=MAX_REFERENCE_CANDIDATES):
            stored = json.loads(data)
            if isinstance(stored, dict) and stored.get("type") != "item_reference":
                found = stored
                break
        if found is not None:
            out.append(found)
        elif strict:
            raise errors.not_found(
                f"Item with id '{ref}' not found (input[{pos}] is an item_reference; it must name an "
                "input or output item of one of your stored responses).",
                param="input",
            )
    return out
