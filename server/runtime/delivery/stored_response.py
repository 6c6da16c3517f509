"""A stored response as the Response object the API returns (`GET /responses/{id}`, a
foreground response's JSON, the operator view): made of its row and the output items kept in
its output, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ...protocol.request import CreateRequest
from ...protocol.response import build_response
from ...store import OutputItemRow, ResponseRow


def response_object(row: ResponseRow, items: Iterable[OutputItemRow]) -> dict[str, Any]:
    """The Response object of `row` with `items` (its output items, in order) as its output."""
    return build_response(
        CreateRequest.from_json_dict(json.loads(row.request)),
        response_id=row.id,
        status=row.status,
        created_at=int(row.created_at),
        completed_at=int(row.completed_at) if row.completed_at is not None else None,
        output=[json.loads(o.data) for o in items],
        error=json.loads(row.error) if row.error else None,
        incomplete_details=json.loads(row.incomplete_details) if row.incomplete_details else None,
        usage=json.loads(row.usage) if row.usage else None,
        conversation_id=row.conversation_id,
    )
