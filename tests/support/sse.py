"""The one SSE parser of the test suite, and the checks every full replay must pass.

Terminal event types and statuses come from `durable_responses.protocol`, so a test cannot disagree with
the server about what ends a response.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from durable_responses.protocol.events import TERMINAL_EVENT_TYPES
from durable_responses.store import TERMINAL_STATUSES

__all__ = [
    "TERMINAL_EVENT_TYPES",
    "TERMINAL_STATUSES",
    "Frame",
    "check_sequence",
    "iter_frames",
    "parse_sse",
    "stream_events",
]


@dataclass
class Frame:
    """One SSE frame: `event:`, `id:` and the `data:` text (with its JSON, when there is data)."""

    event: str | None
    id: str | None
    data: str
    json: Any


def _frame(lines: Iterable[str]) -> Frame | None:
    fields: dict[str, str] = {}
    data_lines: list[str] = []
    for line in lines:
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data_lines.append(value)
        else:
            fields[name] = value
    if not fields and not data_lines:
        return None
    data = "\n".join(data_lines)
    return Frame(fields.get("event"), fields.get("id"), data, json.loads(data) if data_lines else None)


def parse_sse(text: str) -> list[Frame]:
    """Frames of a whole SSE body; comments (keep-alives) are dropped."""
    frames: list[Frame] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        f = _frame(block.split("\n"))
        if f is not None:
            frames.append(f)
    return frames


def iter_frames(lines: Iterable[str]) -> Iterator[Frame]:
    """Frames from an iterator of lines (e.g. `httpx.Response.iter_lines()`), as they arrive."""
    block: list[str] = []
    for line in lines:
        if line == "":
            f = _frame(block)
            block = []
            if f is not None:
                yield f
        else:
            block.append(line)
    f = _frame(block)
    if f is not None:
        yield f


def stream_events(
    base_url: str,
    response_id: str,
    *,
    after: int | None = None,
    last_event_id: int | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 120,
    client: httpx.Client | None = None,
) -> list[dict[str, Any]]:
    """`GET /responses/{id}?stream=true` (optionally `starting_after` / `Last-Event-ID`): every event
    until the terminal one or the end of the stream. `client`: reuse one (many replays)."""
    params: dict[str, str] = {"stream": "true"}
    if after is not None:
        params["starting_after"] = str(after)
    h = {"authorization": "Bearer test-key", **(headers or {})}
    if last_event_id is not None:
        h["last-event-id"] = str(last_event_id)
    out: list[dict[str, Any]] = []
    stream = client.stream if client is not None else httpx.stream
    with stream("GET", f"{base_url}/responses/{response_id}", params=params, timeout=timeout, headers=h) as r:
        r.raise_for_status()
        for f in iter_frames(r.iter_lines()):
            if f.json is None:
                continue
            out.append(f.json)
            if f.json.get("type") in TERMINAL_EVENT_TYPES:
                break
    return out


def check_sequence(events: list[dict[str, Any]], *, label: str = "") -> None:
    """Invariant 4 over one response's full event list (sequence 0..last), and the terminal
    output: exactly the items closed other than `incomplete`, in output order."""
    seqs = [e["sequence_number"] for e in events]
    assert seqs == list(range(len(seqs))), f"{label} sequence not gap-free from 0: {seqs}"
    types = Counter(e["type"] for e in events)
    assert types["response.created"] == 1, f"{label} response.created x{types['response.created']}"
    assert events[0]["type"] == "response.created", f"{label} first event {events[0]['type']}"
    assert types["response.in_progress"] <= 1, (
        f"{label} response.in_progress x{types['response.in_progress']}"
    )
    terminals = [e for e in events if e["type"] in TERMINAL_EVENT_TYPES]
    assert len(terminals) == 1, f"{label} terminal events: {[t['type'] for t in terminals]}"
    assert events[-1]["type"] in TERMINAL_EVENT_TYPES, f"{label} last event is {events[-1]['type']}"
    added: dict[int, str] = {}
    done: dict[int, str] = {}
    for e in events:
        if e["type"] == "response.output_item.added":
            idx, iid = e["output_index"], e["item"]["id"]
            assert idx not in added, f"{label} output_index {idx} added twice ({added[idx]} then {iid})"
            added[idx] = iid
        elif e["type"] == "response.output_item.done":
            idx, iid = e["output_index"], e["item"]["id"]
            assert added.get(idx) == iid, f"{label} output_item.done {idx}/{iid} without matching added"
            assert idx not in done, f"{label} output_item.done twice for index {idx}"
            done[idx] = iid
    missing = set(added) - set(done)
    assert not missing, f"{label} output items added but never done: {sorted(missing)}"
    kept = sorted(
        (e["output_index"], e["item"]["id"])
        for e in events
        if e["type"] == "response.output_item.done" and e["item"].get("status") != "incomplete"
    )
    listed = [item["id"] for item in terminals[0]["response"]["output"]]
    assert listed == [iid for _, iid in kept], f"{label} terminal output {listed} != items done {kept}"
