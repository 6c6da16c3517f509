"""Live delivery keeps pace with the run: a client sees outputs while the host still maps them.

Regression 1: when the framework hands over a burst of updates (here 1000 outputs made in one
superstep) without suspending, the run kept the event loop to itself; the outbox writer and
the relay got one loop turn per pause of the run, and SQLite's writer thread waited for the
GIL at every row. A foreground stream then showed its first output ~100 ms late, after the
host had mapped and checkpointed the whole burst. Both dialects, foreground and background.

Regression 2: an executor's outputs reach the runner only through an unbounded queue that the
executor never waits on, so a handler that yields many outputs without awaiting anything else
showed its first output only after it returned (the bench's 1000-output superstep: ~25 ms on
a slow machine, all of it the framework running the handler). Live streams now take each
event as it is made (`_af_private.pace_events`).

In-process servers (shared per module, one per dialect and app): the client reads in the
test's thread while the server runs in its own, so the client sharing the interpreter only
makes the server's job harder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.inprocess import InProcessServer
from tests.support.sse import TERMINAL_EVENT_TYPES, iter_frames

APP = "tests.apps.workflows:burst_then_marker"
OUTPUTS = 1000


def _stream_text(srv: InProcessServer, body: dict[str, Any]) -> tuple[float, list[str]]:
    """Stream a response to its end: when the client saw its first text delta, and every delta."""
    first_seen, _last_seen, deltas = _stream_deltas(srv, body)
    return first_seen, deltas


def _stream_deltas(srv: InProcessServer, body: dict[str, Any]) -> tuple[float, float, list[str]]:
    """Stream a response to its end: when the client saw its first and its last text delta, and
    every delta."""
    first_seen: float | None = None
    last_seen = 0.0
    deltas: list[str] = []
    terminal = None
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        with c.stream("POST", "/responses", json=body) as r:
            assert r.status_code == 200
            for frame in iter_frames(r.iter_lines()):
                if frame.event == "response.output_text.delta":
                    last_seen = time.time()
                    if first_seen is None:
                        first_seen = last_seen
                    deltas.append(frame.json["delta"])
                elif frame.event in TERMINAL_EVENT_TYPES:
                    terminal = frame.event
    assert terminal == "response.completed"
    assert first_seen is not None
    return first_seen, last_seen, deltas


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_first_output_reaches_the_client_while_the_burst_is_mapped(
    shared_servers: Any, background: bool
) -> None:
    srv: InProcessServer = shared_servers(APP)
    body: dict[str, Any] = {"model": "m", "input": str(OUTPUTS), "stream": True}
    if background:
        body["background"] = True
    first_seen, deltas = _stream_text(srv, body)
    assert deltas[:-1] == [f"burst {i}" for i in range(OUTPUTS)]
    assert deltas[-1].startswith("marker t=")
    marker_started = float(deltas[-1].split("t=")[1])
    # Same machine, same wall clock: the first output was on the client's screen before the
    # host was done with the burst (the marker's superstep starts only then).
    assert first_seen < marker_started, (
        f"first output seen {first_seen - marker_started:.3f} s after the host finished the burst"
    )


@pytest.mark.parametrize(
    "mode", ["foreground", "background", "store-false"], ids=["foreground", "background", "store-false"]
)
def test_first_output_reaches_the_client_before_the_executor_s_handler_returns(
    shared_servers: Any, mode: str
) -> None:
    srv: InProcessServer = shared_servers("tests.apps.workflows:busy_burst")
    body: dict[str, Any] = {"model": "m", "input": "200", "stream": True}
    if mode == "background":
        body["background"] = True
    if mode == "store-false":
        body["store"] = False
    first_seen, deltas = _stream_text(srv, body)
    assert deltas[:-1] == [f"busy {i}" for i in range(199)]
    last_made = float(deltas[-1].split("t=")[1])
    # The handler spends ~0.3 s making its 200 outputs: the first was on the client's screen
    # well before the last was made (same machine, same wall clock).
    assert first_seen < last_made - 0.1, (
        f"first output seen {first_seen - last_made:+.3f} s from the moment the last was made"
    )


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_last_output_reaches_the_client_before_the_framework_s_end_of_stream_work(
    shared_servers: Any, background: bool
) -> None:
    """Regression 3: once a workflow's last event is taken, agent-framework's `WorkflowAgent`
    stream builds its final response from every update (twice in 1.23.0, tens of ms after a
    1000-output burst) before the stream ends; the outputs the run still held waited behind that
    work. Live streams now commit and send them first (`_af_private.on_events_end`)."""
    from tests.apps.workflows import FINAL_RESPONSE_BUILT

    srv: InProcessServer = shared_servers("tests.apps.workflows:burst_then_marker_probed")
    body: dict[str, Any] = {"model": "m", "input": str(OUTPUTS), "stream": True}
    if background:
        body["background"] = True
    FINAL_RESPONSE_BUILT.clear()
    # A client in a process of its own (`support.byte_clock`): the in-process server shares this
    # interpreter's GIL, and a client that parses thousands of frames as they come measures itself.
    out = subprocess.run(
        [sys.executable, "-m", "tests.support.byte_clock", srv.base_url, json.dumps(body)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(out.stdout)
    assert seen["terminal"] == "response.completed" and seen["deltas"] == OUTPUTS + 1
    assert len(FINAL_RESPONSE_BUILT) == 1
    # Same machine, same wall clock: the client had the last output before the framework was
    # done building its final response.
    assert seen["last"] < FINAL_RESPONSE_BUILT[0], (
        f"last output seen {seen['last'] - FINAL_RESPONSE_BUILT[0]:+.3f} s from the final response being built"
    )


def _superstep_writes(base: str) -> float:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "durable_responses_store_writes_total" and s.labels.get("kind") == "superstep":
                return s.value
    return 0.0


def test_a_json_post_is_delivered_durable_with_fewer_writes_than_a_stream(shared_servers: Any) -> None:
    """Under live delivery a request that neither streams nor runs in the background is delivered
    durable: nobody reads it live, so its run commits with its checkpoints only (no first output
    committed alone); the client gets the same output."""
    srv: InProcessServer = shared_servers("tests.apps.workflows:burst_then_marker")
    base, body = srv.base_url, {"model": "m", "input": "3"}
    before = _superstep_writes(base)
    r = httpx.post(f"{base}/v1/responses", json=body, timeout=30)
    assert r.status_code == 200 and r.json()["status"] == "completed"
    json_writes = _superstep_writes(base) - before
    texts = [c["text"] for item in r.json()["output"] for c in item["content"]]
    before = _superstep_writes(base)
    _first, deltas = _stream_text(srv, {**body, "stream": True})
    stream_writes = _superstep_writes(base) - before
    assert texts[:3] == deltas[:3] == ["burst 0", "burst 1", "burst 2"]
    assert texts[3].startswith("marker t=") and deltas[3].startswith("marker t=")
    assert 0 < json_writes < stream_writes
    summary = httpx.get(f"{base}/v1/admin/responses/{r.json()['id']}", timeout=10).json()["summary"]
    assert summary["delivery"] == "durable"
