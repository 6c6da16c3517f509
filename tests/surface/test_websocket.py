"""WebSocket mode on `/responses` and `/v1/responses` (Open Responses 2026-04-24), with a real
WebSocket client (`websockets`) and the openai SDK's `responses.connect()` against real uvicorn
on loopback, SQLite and PostgreSQL.

What is checked: several turns on one socket, chained by `previous_response_id`, each event
valid against the schema and the same row a replay over HTTP reads (commit before send);
malformed and disallowed messages get the `WebSocketErrorEvent` envelope and the socket stays
usable; auth, tenancy and admission as over HTTP; a socket closed mid-turn cancels the turn.
(The crash during a turn: tests/crash/test_websocket_crash.py.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.exceptions import InvalidStatus

from durable_responses.store import DatabaseUnavailable, Unavailable
from tests.schema_validator import validate, validate_event
from tests.support.inprocess import InProcessServer
from tests.support.responses import countdown_ticks, output_texts, retrieve, wait_status
from tests.support.sse import check_sequence, stream_events
from tests.support.ws import read_turn, recv_json, send_create, turn, ws_connect

COUNTDOWN = "durable_responses.examples.countdown:countdown"


def _error(event: dict[str, Any], status: int, code: str, param: str | None = None) -> None:
    validate("WebSocketErrorEvent", event)
    assert event["type"] == "error" and event["status"] == status, event
    assert event["error"]["code"] == code, event
    if param is not None:
        assert event["error"]["param"] == param, event


def _check_turn(server: InProcessServer, events: list[dict[str, Any]]) -> str:
    """Every event valid, one whole response, and exactly the rows a replay reads."""
    for e in events:
        validate_event(e)
    check_sequence(events)
    rid: str = events[0]["response"]["id"]
    assert stream_events(server.base_url, rid) == events
    return rid


@pytest.mark.parametrize("path", ["/v1/responses", "/responses"])
def test_three_turns_on_one_socket_chain_and_match_the_replay(
    shared_server: InProcessServer, path: str
) -> None:
    previous = None
    ids = []
    with ws_connect(shared_server, path) as ws:
        for i in range(3):
            body: dict[str, Any] = {"model": "echo", "input": f"turn {i}"}
            if previous is not None:
                body["previous_response_id"] = previous
            events = turn(ws, **body)
            rid = _check_turn(shared_server, events)
            final = events[-1]["response"]
            assert events[-1]["type"] == "response.completed", final
            assert output_texts(final) == [f"turn {i}"]
            assert final["previous_response_id"] == previous
            # A WebSocket turn is a foreground streamed response, stored as one.
            assert final["background"] is False and final["store"] is True
            previous = rid
            ids.append(rid)
    assert len(set(ids)) == 3
    # The chain is the server's: the last turn's input items are its own, its history the chain's.
    assert retrieve(shared_server, ids[2])["previous_response_id"] == ids[1]


def test_store_false_turns_stream_from_memory(shared_server: InProcessServer) -> None:
    with ws_connect(shared_server) as ws:
        for i in range(2):
            events = turn(ws, input=f"unstored {i}", store=False)
            for e in events:
                validate_event(e)
            check_sequence(events)
            assert output_texts(events[-1]["response"]) == [f"unstored {i}"]
            rid = events[0]["response"]["id"]
            assert httpx.get(f"{shared_server.base_url}/v1/responses/{rid}").status_code == 404


def test_malformed_and_disallowed_messages_get_the_error_envelope(shared_server: InProcessServer) -> None:
    # (message, status, code (None: whatever the HTTP layer says), param)
    refused: list[tuple[str | bytes, int, str | None, str | None]] = [
        ("not json", 400, "invalid_json", None),
        ('{"type": "response.create", "input": "x"', 400, "invalid_json", None),
        ("[1, 2]", 400, "invalid_type", None),
        ('"response.create"', 400, "invalid_type", None),
        ('{"input": "no type"}', 400, "missing_required_parameter", "type"),
        ('{"type": "response.cancel"}', 400, "unknown_event_type", "type"),
        ('{"type": "session.update", "input": "x"}', 400, "unknown_event_type", "type"),
        ('{"type": "response.create", "input": "x", "stream": true}', 400, "unsupported_parameter", "stream"),
        (
            '{"type": "response.create", "input": "x", "stream": false}',
            400,
            "unsupported_parameter",
            "stream",
        ),
        (
            '{"type": "response.create", "input": "x", "stream_options": {"include_obfuscation": false}}',
            400,
            "unsupported_parameter",
            "stream_options",
        ),
        (
            '{"type": "response.create", "input": "x", "background": true}',
            400,
            "unsupported_parameter",
            "background",
        ),
        (
            '{"type": "response.create", "input": "x", "background": false}',
            400,
            "unsupported_parameter",
            "background",
        ),
        ('{"type": "response.create"}', 400, "missing_required_parameter", "input"),
        ('{"type": "response.create", "input": "x", "bogus": 1}', 400, "unknown_parameter", "bogus"),
        ('{"type": "response.create", "input": 42}', 400, None, "input"),
        ('{"type": "response.create", "input": "x", "temperature": "hot"}', 400, None, "temperature"),
        (
            '{"type": "response.create", "input": "x", "previous_response_id": "resp_nope"}',
            404,
            "not_found",
            "previous_response_id",
        ),
        ("[" * 200 + "]" * 200, 400, "invalid_json", None),
        (b'{"type": "response.create", "input": "\xff"}', 400, "invalid_json", None),
    ]
    with ws_connect(shared_server) as ws:
        for message, status, code, param in refused:
            ws.send(message)
            event = recv_json(ws)
            validate("WebSocketErrorEvent", event)
            assert event["status"] == status, (message, event)
            if code is not None:
                assert event["error"]["code"] == code, (message, event)
            assert event["error"]["param"] == param, (message, event)
            assert event["error"]["message"], event
        # Still usable: a valid turn after every refusal.
        events = turn(ws, input="still here")
        _check_turn(shared_server, events)
        assert output_texts(events[-1]["response"]) == ["still here"]
        # Binary frames carry the same JSON.
        ws.send(json.dumps({"type": "response.create", "input": "as bytes"}).encode())
        assert output_texts(read_turn(ws)[-1]["response"]) == ["as bytes"]


def test_a_second_create_while_a_turn_runs_is_refused_and_the_turn_goes_on(
    shared_servers: Callable[..., InProcessServer],
) -> None:
    srv = shared_servers(COUNTDOWN)
    with ws_connect(srv) as ws:
        send_create(ws, input="4 delay=0.15")
        first = [recv_json(ws)]
        assert first[0]["type"] == "response.created"
        send_create(ws, input="1")
        events = list(first)
        refusals = []
        while events[-1]["type"] not in ("response.completed", "response.failed", "response.incomplete"):
            e = recv_json(ws)
            (refusals if e["type"] == "error" else events).append(e)
        assert len(refusals) == 1, refusals
        _error(refusals[0], 409, "response_already_in_flight")
        rid = _check_turn(srv, events)
        assert output_texts(events[-1]["response"]) == countdown_ticks(4)
        # The next turn, once the first ended, is accepted on the same socket.
        after = turn(ws, input="1 delay=0", previous_response_id=rid)
        _check_turn(srv, after)
        assert after[-1]["type"] == "response.completed"


def test_a_socket_closed_mid_turn_cancels_the_turn(shared_servers: Callable[..., InProcessServer]) -> None:
    srv = shared_servers(COUNTDOWN)
    with ws_connect(srv) as ws:
        send_create(ws, input="30 delay=0.1")
        created = recv_json(ws)
        rid = created["response"]["id"]
        while recv_json(ws)["type"] != "response.output_text.delta":
            pass
    final = wait_status(srv, rid)
    assert final["status"] == "cancelled", final["status"]
    replay = stream_events(srv.base_url, rid)
    check_sequence(replay)


def test_the_model_of_each_turn_picks_the_app(shared_servers: Callable[..., InProcessServer]) -> None:
    srv = shared_servers(f"echo=durable_responses.examples.echo:echo,countdown={COUNTDOWN}")
    with ws_connect(srv) as ws:
        assert output_texts(
            turn(ws, model="countdown", input="2 delay=0")[-1]["response"]
        ) == countdown_ticks(2)
        assert output_texts(turn(ws, model="echo", input="2 delay=0")[-1]["response"]) == ["2 delay=0"]
        send_create(ws, model="nope", input="x")
        refusal = recv_json(ws)
        _error(refusal, 400, refusal["error"]["code"], "model")
        assert "countdown" in refusal["error"]["message"] and "echo" in refusal["error"]["message"]


def test_the_openai_sdk_connects_and_runs_turns(shared_server: InProcessServer) -> None:
    client = shared_server.client()
    previous = None
    with client.responses.connect() as conn:
        for i in range(3):
            extra = {"previous_response_id": previous} if previous else {}
            conn.response.create(model="echo", input=f"sdk {i}", **extra)
            types = []
            for event in conn:
                types.append(event.type)
                if event.type == "response.completed":
                    assert event.response.output_text == f"sdk {i}"
                    previous = event.response.id
                    break
                assert event.type != "error", event
            assert types[0] == "response.created" and "response.output_text.delta" in types
        conn.send({"type": "response.create", "model": "echo", "input": "x", "background": True})  # type: ignore[typeddict-unknown-key]
        refusal = conn.recv()
        assert refusal.type == "error" and refusal.status == 400  # type: ignore[union-attr]


# region auth, tenancy, admission


@pytest.fixture
def keyed(tmp_path: Path) -> Any:
    env = {"DURABLE_RESPONSES_API_KEYS": "alice:key-a,bob:key-b"}
    with InProcessServer(f"sqlite:///{tmp_path}/k.db", env=env) as s:
        yield s


def test_auth_and_tenancy_are_the_http_layers(keyed: InProcessServer) -> None:
    for headers in (None, {"authorization": "Bearer wrong"}):
        with pytest.raises(InvalidStatus) as refused:
            ws_connect(keyed, headers=headers)
        assert refused.value.response.status_code == 401
        body = json.loads(refused.value.response.body or b"{}")
        assert body["error"]["code"] == "invalid_api_key"
    alice = {"authorization": "Bearer key-a"}
    bob = {"authorization": "Bearer key-b"}
    with ws_connect(keyed, headers=alice) as ws:
        rid = _check_turn_as(keyed, turn(ws, input="alice's"), alice)
    # Another tenant sees nothing of it, over HTTP or over its own socket.
    assert httpx.get(f"{keyed.base_url}/v1/responses/{rid}", headers=bob).status_code == 404
    assert httpx.get(f"{keyed.base_url}/v1/responses/{rid}", headers=alice).status_code == 200
    with ws_connect(keyed, headers=bob) as ws:
        send_create(ws, input="continue hers", previous_response_id=rid)
        _error(recv_json(ws), 404, "not_found", "previous_response_id")
    with ws_connect(keyed, headers=alice) as ws:
        events = turn(ws, input="continue mine", previous_response_id=rid)
        assert events[-1]["response"]["previous_response_id"] == rid


def _check_turn_as(server: InProcessServer, events: list[dict[str, Any]], headers: dict[str, str]) -> str:
    check_sequence(events)
    rid: str = events[0]["response"]["id"]
    assert stream_events(server.base_url, rid, headers=headers) == events
    return rid


def test_admission_is_the_http_layers(tmp_path: Path) -> None:
    env = {"DURABLE_RESPONSES_MAX_INFLIGHT": "1"}
    with InProcessServer(f"sqlite:///{tmp_path}/a.db", COUNTDOWN, env=env) as srv:
        with ws_connect(srv) as busy, ws_connect(srv) as other:
            send_create(busy, input="3 delay=0.2")
            assert recv_json(busy)["type"] == "response.created"
            send_create(other, input="1")
            refusal = recv_json(other)
            _error(refusal, 429, refusal["error"]["code"])
            # Over HTTP the same answer.
            r = httpx.post(f"{srv.base_url}/v1/responses", json={"input": "1"})
            assert r.status_code == 429
            assert refusal["error"] == r.json()["error"]
            assert read_turn(busy)[-1]["type"] == "response.completed"
            # Once the slot is free the other socket's turn runs.
            deadline = time.monotonic() + 10
            while True:
                send_create(other, input="0 delay=0")
                first = recv_json(other)
                if first["type"] != "error" or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert first["type"] == "response.created", first
            assert read_turn(other)[-1]["type"] == "response.completed"


def test_a_browser_page_of_another_origin_is_refused(tmp_path: Path) -> None:
    """WebSockets are not subject to CORS: the upgrade checks `Origin` itself."""
    allowed = "http://app.example"
    env = {"DURABLE_RESPONSES_CORS_ORIGINS": allowed}
    with InProcessServer(f"sqlite:///{tmp_path}/o.db", env=env) as srv:
        for origin in ("http://evil.example", "http://127.0.0.1:1", "null"):
            with pytest.raises(InvalidStatus) as refused:
                ws_connect(srv, headers={"origin": origin})
            assert refused.value.response.status_code == 403
            body = json.loads(refused.value.response.body or b"{}")
            assert body["error"]["code"] == "origin_not_allowed", body
        # No Origin (a program), the server's own, and a CORS origin are served.
        for headers in (None, {"origin": srv.base_url}, {"origin": allowed}):
            with ws_connect(srv, headers=headers) as ws:
                assert turn(ws, input="hello")[-1]["type"] == "response.completed"
    with InProcessServer(f"sqlite:///{tmp_path}/p.db") as srv:  # CORS off: own origin only
        with pytest.raises(InvalidStatus) as refused:
            ws_connect(srv, headers={"origin": allowed})
        assert refused.value.response.status_code == 403
        with ws_connect(srv, headers={"origin": srv.base_url}) as ws:
            assert turn(ws, input="hello")[-1]["type"] == "response.completed"


def _samples(server: InProcessServer) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = httpx.get(f"{server.base_url}/metrics", timeout=10)
    assert r.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def test_metrics_count_upgrades_and_messages(keyed: InProcessServer) -> None:
    before = _samples(keyed)
    with pytest.raises(InvalidStatus):
        ws_connect(keyed)
    with ws_connect(keyed, headers={"authorization": "Bearer key-a"}) as ws:
        turn(ws, input="one")
        turn(ws, input="two")
        ws.send("{")
        recv_json(ws)
        send_create(ws, input="x", previous_response_id="resp_unknown")
        recv_json(ws)
    after = _samples(keyed)

    def d(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert d("durable_responses_websocket_connections_total", outcome="denied") == 1
    assert d("durable_responses_websocket_connections_total", outcome="accepted") == 1
    assert d("durable_responses_websocket_messages_total", outcome="created") == 2
    assert d("durable_responses_websocket_messages_total", outcome="400") == 1
    assert d("durable_responses_websocket_messages_total", outcome="404") == 1
    assert d("durable_responses_creations_total", mode="stream") == 2


def test_a_message_over_the_body_limit_is_a_413(tmp_path: Path) -> None:
    env = {"DURABLE_RESPONSES_MAX_BODY_BYTES": "4096"}
    with InProcessServer(f"sqlite:///{tmp_path}/l.db", env=env) as srv, ws_connect(srv) as ws:
        send_create(ws, input="x" * 5000)
        _error(recv_json(ws), 413, "payload_too_large")
        send_create(ws, input="é" * 1500)  # 3,000 bytes of text: under the limit
        assert read_turn(ws)[-1]["type"] == "response.completed"
        send_create(ws, input="é" * 2100)  # 2,100 characters, 4,200 bytes: over
        _error(recv_json(ws), 413, "payload_too_large")


# endregion


def test_a_turn_whose_events_stop_gets_a_503_naming_where_to_resume(tmp_path: Path) -> None:
    """The relay's read fails mid-turn (the database became unavailable): the socket gets the
    error envelope (503) naming the response and the last sequence number sent, and stays
    usable; the rest is read over HTTP from there, nothing twice."""
    with InProcessServer(f"sqlite:///{tmp_path}/f.db", COUNTDOWN) as srv, ws_connect(srv) as ws:
        assert srv.service is not None
        store: Any = srv.service.host.store
        send_create(ws, input="12 delay=0.05")
        seen = [recv_json(ws) for _ in range(4)]

        def down(*_a: Any, **_k: Any) -> Any:
            raise DatabaseUnavailable(Unavailable.UNREACHABLE, "ConnectionRefusedError: refused")

        store.notifier.tail_after = lambda *_a: None  # every batch is read
        store.read_events = down
        while (event := recv_json(ws))["type"] != "error":
            seen.append(event)
        del store.notifier.tail_after, store.read_events  # the methods again
        _error(event, 503, "unavailable")
        rid, last = seen[0]["response"]["id"], seen[-1]["sequence_number"]
        assert f"GET /v1/responses/{rid}?stream=true&starting_after={last}" in event["error"]["message"]
        rest = stream_events(srv.base_url, rid, after=last)
        combined = seen + rest
        check_sequence(combined)
        assert stream_events(srv.base_url, rid) == combined
        # The socket is still usable.
        assert turn(ws, input="1 delay=0")[-1]["type"] == "response.completed"
        assert "Traceback" not in srv.log(), srv.log()


def test_an_unstored_turn_cannot_be_continued(shared_server: InProcessServer) -> None:
    """Nothing of a store=false turn is kept, not even for the socket that ran it (a 404, as
    over HTTP; README says so)."""
    with ws_connect(shared_server) as ws:
        rid = turn(ws, input="forget me", store=False)[0]["response"]["id"]
        send_create(ws, input="and then?", previous_response_id=rid)
        _error(recv_json(ws), 404, "not_found", "previous_response_id")
