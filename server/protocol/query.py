"""Query-string parameters of the GET routes: `input_items` listing and stream resumption.

Invariant: the values returned are already typed and in range (limit 1..100, order asc|desc,
starting_after a non-negative integer); anything malformed is a 400 naming the parameter, and
parameters this layer does not know are ignored, as OpenAI does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._check import fail, want_id

# An item id is at most 256 characters; a longer cursor names nothing.
MAX_CURSOR_CHARS = 256
_UINT = re.compile(r"[0-9]{1,18}")


@dataclass(frozen=True)
class ListParams:
    after: str | None = None
    before: str | None = None
    limit: int = 20
    order: str = "desc"


@dataclass(frozen=True)
class StreamParams:
    stream: bool = False
    starting_after: int | None = None


def parse_list_params(query: Mapping[str, str]) -> ListParams:
    """`?after=&before=&limit=&order=` of `GET /responses/{id}/input_items`."""
    limit = 20
    raw_limit = query.get("limit")
    if raw_limit is not None:
        text = raw_limit.strip()
        if _UINT.fullmatch(text) is None or not 1 <= int(text) <= 100:
            fail(f"Invalid 'limit': expected an integer between 1 and 100, got {raw_limit[:40]!r}.", "limit")
        limit = int(text)
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        fail(f"Invalid 'order': expected 'asc' or 'desc', got {order[:40]!r}.", "order")
    after, before = query.get("after") or None, query.get("before") or None
    return ListParams(
        after=None if after is None else want_id(after, "after", max_len=MAX_CURSOR_CHARS),
        before=None if before is None else want_id(before, "before", max_len=MAX_CURSOR_CHARS),
        limit=limit,
        order=order,
    )


def _uint(value: str, param: str) -> int:
    text = value.strip()
    if _UINT.fullmatch(text) is None:
        fail(f"Invalid '{param}': expected a non-negative integer, got {value[:40]!r}.", param)
    return int(text)


def parse_stream_params(query: Mapping[str, str], last_event_id_header: str | None) -> StreamParams:
    """`?stream=&starting_after=` of `GET /responses/{id}`; the query wins over `Last-Event-ID`.

    `include_obfuscation` is accepted and ignored: this host never pads events.
    """
    raw_stream = query.get("stream")
    stream = False
    if raw_stream is not None:
        lowered = raw_stream.strip().lower()
        if lowered not in ("true", "false"):
            fail(f"Invalid 'stream': expected 'true' or 'false', got {raw_stream[:40]!r}.", "stream")
        stream = lowered == "true"
    starting_after: int | None = None
    raw_after = query.get("starting_after")
    if raw_after is not None:
        starting_after = _uint(raw_after, "starting_after")
    elif last_event_id_header is not None and last_event_id_header.strip():
        starting_after = _uint(last_event_id_header, "Last-Event-ID")
    return StreamParams(stream=stream, starting_after=starting_after)
