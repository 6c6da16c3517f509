"""Server-sent-event framing of committed events.

Invariant: one frame is exactly `event: <type>`, `id: <sequence_number>`, `data: <one-line JSON>`
and a blank line; JSON is compact and never contains a raw newline, so a frame can never be split
or misparsed by an EventSource client.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import orjson


def dumps(obj: Any) -> str:
    """Compact JSON, UTF-8 kept as is (control characters are escaped, so no raw newline).

    orjson does this several times faster than `json` (every event goes through here); the
    few values it refuses (integers beyond 64 bits, non-string keys) fall back to `json`.
    NaN and infinities, which are not JSON, come out as null.
    """
    try:
        return orjson.dumps(obj).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class LastFrames(bytes):
    """Frames that end a stream (their last is a terminal event): a response body whose last
    chunk is one ends with it, in the same write, instead of an empty chunk of its own."""


def frame(event_type: str, seq: int, data_json: str) -> bytes:
    """One SSE frame; `data_json` must be single-line JSON (as `dumps` produces)."""
    return frames(((seq, event_type, data_json),))


def frames(events: Sequence[tuple[int, str, str]]) -> bytes:
    """The frames of `events`, each (sequence number, type, single-line JSON), as one chunk,
    built as one text and checked in one pass (a relay sends the events of a commit together;
    framed one by one, the checks and the encoding cost a third more)."""
    text = "".join([f"event: {t}\nid: {seq}\ndata: {d}\n\n" for seq, t, d in events])
    # Each frame holds exactly four newlines of its own; any other is inside a type or JSON.
    if text.count("\n") != 4 * len(events) or "\r" in text:
        raise ValueError("SSE event type and data must not contain a newline")
    return text.encode()


def comment(text: str = "keep-alive") -> bytes:
    """An SSE comment line (ignored by clients): keeps idle connections open through proxies."""
    if "\n" in text or "\r" in text:
        raise ValueError("SSE comment must not contain a newline")
    return f": {text}\n\n".encode()
