"""Helpers for crash tests: read streams, wait for terminal states, check event sequences."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

TERMINAL_EVENTS = {"response.completed", "response.failed", "response.incomplete", "response.cancelled"}
TERMINAL_STATUSES = {"completed", "failed", "incomplete", "cancelled"}


def dump(event: Any) -> dict[str, Any]:
    if isinstance(event, dict):
        return event
    return event.model_dump(mode="json", exclude_unset=True)


def read_until(stream: Any, stop: Any) -> list[dict[str, Any]]:
    """Iterate an openai SSE stream, collecting events, until `stop(event, events)` is true."""
    seen: list[dict[str, Any]] = []
    for e in stream:
        d = dump(e)
        seen.append(d)
        if stop(d, seen):
            break
    return seen


def sse_events(
    base_url: str, response_id: str, after: int | None = None, timeout: float = 120
) -> list[dict[str, Any]]:
    """GET /responses/{id}?stream=true[&starting_after=N] over raw SSE; all events until the stream ends."""
    params: dict[str, Any] = {"stream": "true"}
    if after is not None:
        params["starting_after"] = str(after)
    out: list[dict[str, Any]] = []
    with httpx.stream(
        "GET",
        f"{base_url}/responses/{response_id}",
        params=params,
        timeout=timeout,
        headers={"authorization": "Bearer test-key"},
    ) as r:
        r.raise_for_status()
        data_lines: list[str] = []
        for line in r.iter_lines():
            if line.startswith("data:"):
                data_lines.append(line[5:].strip())
            elif line == "" and data_lines:
                out.append(json.loads("\n".join(data_lines)))
                data_lines = []
                if out[-1].get("type") in TERMINAL_EVENTS:
                    break
        if data_lines:
            out.append(json.loads("\n".join(data_lines)))
    return out


def wait_terminal(client: Any, response_id: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = client.responses.retrieve(response_id)
            if last.status in TERMINAL_STATUSES:
                return last
        except Exception:
            pass
        time.sleep(0.2)
    raise AssertionError(f"response {response_id} not terminal after {timeout}s: {last}")


def output_texts(response: Any) -> list[str]:
    """Texts of the final `response.output` message items, in order."""
    texts: list[str] = []
    data = dump(response)
    for item in data.get("output", []):
        if item.get("type") == "message":
            for part in item.get("content", []):
                if part.get("type") == "output_text":
                    texts.append(part.get("text", ""))
    return texts


def countdown_ticks(n: int) -> list[str]:
    return [f"tick {i}" for i in range(n, -1, -1)]


def check_sequence(events: list[dict[str, Any]], *, label: str = "") -> None:
    """Invariant 4 over one response's full event list (sequence 0..last)."""
    seqs = [e["sequence_number"] for e in events]
    assert seqs == list(range(len(seqs))), f"{label} sequence not gap-free from 0: {seqs}"
    types = Counter(e["type"] for e in events)
    assert types["response.created"] == 1, f"{label} response.created x{types['response.created']}"
    assert events[0]["type"] == "response.created", f"{label} first event {events[0]['type']}"
    assert types["response.in_progress"] <= 1, (
        f"{label} response.in_progress x{types['response.in_progress']}"
    )
    terminals = [e for e in events if e["type"] in TERMINAL_EVENTS]
    assert len(terminals) == 1, f"{label} terminal events: {[t['type'] for t in terminals]}"
    assert events[-1]["type"] in TERMINAL_EVENTS, f"{label} last event is {events[-1]['type']}"
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
    # The terminal event's Response lists exactly the items closed other than `incomplete`
    # (regression: after a recovery it missed the last superstep's, still being committed).
    kept = sorted(
        (e["output_index"], e["item"]["id"])
        for e in events
        if e["type"] == "response.output_item.done" and e["item"].get("status") != "incomplete"
    )
    listed = [item["id"] for item in terminals[0]["response"]["output"]]
    assert listed == [iid for _, iid in kept], f"{label} terminal output {listed} != items done {kept}"


def incomplete_indexes(events: list[dict[str, Any]]) -> set[int]:
    return {
        e["output_index"]
        for e in events
        if e["type"] == "response.output_item.done" and e["item"].get("status") == "incomplete"
    }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line.strip()]
