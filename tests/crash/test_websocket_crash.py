"""WebSocket mode across a crash: a real `durable-responses serve`, a real WebSocket client,
`kill -9` during the socket's second turn, a restart on the same database (SQLite and
PostgreSQL), and the client reading that turn to its end over HTTP
(`GET /v1/responses/{id}?stream=true&starting_after=N`).

A WebSocket turn is a foreground response (the spec forbids `background` on the socket): the
crash ends it `failed` (interrupted), as it ends a foreground SSE stream. What the client saw
before the kill was committed before it was sent, so the replay after the restart starts where
the client stopped and the whole response is every event once, in order.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from tests.schema_validator import validate_event
from tests.support import db
from tests.support.responses import countdown_ticks, output_texts
from tests.support.sse import check_sequence, stream_events
from tests.support.ws import recv_json, send_create, turn, ws_connect

pytestmark = pytest.mark.crash

COUNTDOWN = "durable_responses.examples.countdown:countdown"


@pytest.mark.parametrize("delivery", ["live", "durable"])
def test_kill_during_the_second_turn_then_replay_it_over_http(
    server_factory: Any, database_url: str, delivery: str
) -> None:
    first = server_factory(database_url, app=COUNTDOWN, delivery=delivery).start()
    with ws_connect(first) as ws:
        turn1 = turn(ws, input="2 delay=0")
        check_sequence(turn1)
        rid1 = turn1[0]["response"]["id"]
        assert output_texts(turn1[-1]["response"]) == countdown_ticks(2)

        send_create(ws, input="10 delay=0.3", previous_response_id=rid1)
        before: list[dict[str, Any]] = []
        while not (before and before[-1]["type"] == "response.output_item.done" and len(before) > 12):
            before.append(recv_json(ws))
        first.kill()
        # What was already on its way arrives; then the socket is gone.
        with pytest.raises(ConnectionClosed):
            while True:
                before.append(recv_json(ws, timeout=30))
    rid2 = before[0]["response"]["id"]
    status = db.scalar(database_url, f"SELECT status FROM responses WHERE id = {db.quote(rid2)}")
    assert status in ("queued", "in_progress"), f"killed too late: the turn was already {status}"
    assert before[-1]["type"] != "response.completed"

    second = server_factory(database_url, app=COUNTDOWN, delivery=delivery).start()
    after = stream_events(second.base_url, rid2, after=before[-1]["sequence_number"])
    assert after and after[0]["sequence_number"] == before[-1]["sequence_number"] + 1
    combined = before + after
    for e in combined:
        validate_event(e)
    check_sequence(combined, label=f"{rid2} (socket, then HTTP):")
    # The socket sent committed rows: a full replay is the same events, payloads and all.
    assert stream_events(second.base_url, rid2) == combined
    end = combined[-1]
    assert end["type"] == "response.failed", end["type"]
    assert "server stopped while this response was running" in end["response"]["error"]["message"]
    assert end["response"]["previous_response_id"] == rid1

    # A new socket on the restarted server goes on from the first turn.
    with ws_connect(second) as ws:
        turn3 = turn(ws, input="1 delay=0", previous_response_id=rid1)
    check_sequence(turn3)
    assert turn3[-1]["type"] == "response.completed"
    assert output_texts(turn3[-1]["response"]) == countdown_ticks(1)


def test_sigterm_during_a_turn_lets_it_finish_and_the_rest_is_read_over_http(
    server_factory: Any, database_url: str
) -> None:
    """A rolling update: the server closes its sockets (1012, going away) at SIGTERM, and a turn
    running then finishes within the shutdown grace period, as a foreground SSE stream does; the
    client reads the rest over HTTP from the next server."""
    first = server_factory(database_url, app=COUNTDOWN).start()
    with ws_connect(first) as ws:
        send_create(ws, input="5 delay=0.25")
        before: list[dict[str, Any]] = []
        while not (before and before[-1]["type"] == "response.output_item.done"):
            before.append(recv_json(ws))
        assert first.proc is not None
        first.proc.send_signal(signal.SIGTERM)
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                before.append(recv_json(ws, timeout=30))
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012, closed.value
    first.proc.wait(30)
    rid = before[0]["response"]["id"]
    status = db.scalar(database_url, f"SELECT status FROM responses WHERE id = {db.quote(rid)}")
    assert status == "completed", status

    second = server_factory(database_url, app=COUNTDOWN).start()
    after = stream_events(second.base_url, rid, after=before[-1]["sequence_number"])
    combined = before + after
    check_sequence(combined)
    assert combined[-1]["type"] == "response.completed"
    assert output_texts(combined[-1]["response"]) == countdown_ticks(5)
