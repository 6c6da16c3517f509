"""WebSocket mode in traces: each turn of a socket is a span that continues the upgrade's
`traceparent` (as a POST's request span continues the request's) and is the parent of the
response's run span; a refused message's span ends at once with its status. The real OTLP
exporter sends to a receiver on loopback."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from tests.support.ws import recv_json, turn, ws_connect

from .conftest import start
from .otlp import HttpReceiver, Span
from .test_traces import RUN, _env

TURN = "WebSocket /v1/responses"


def test_each_turn_is_a_span_under_the_callers_trace(tmp_path: Path, servers: list) -> None:  # type: ignore[type-arg]
    trace_id, caller = secrets.token_hex(16), secrets.token_hex(8)
    with HttpReceiver() as otlp:
        srv = start(servers, f"sqlite:///{tmp_path}/t.db", None, tmp_path, env=_env(otlp.endpoint))
        with ws_connect(srv, headers={"traceparent": f"00-{trace_id}-{caller}-01"}) as ws:
            rids = [turn(ws, input=f"turn {i}")[0]["response"]["id"] for i in range(2)]
            ws.send(json.dumps({"type": "response.create", "input": "x", "previous_response_id": "resp_no"}))
            assert recv_json(ws)["status"] == 404

        def complete(spans: list[Span]) -> bool:
            ours = [s for s in spans if s.trace_id == trace_id]
            return sum(s.name == TURN for s in ours) >= 3 and sum(s.name == RUN for s in ours) >= 2

        spans = otlp.received.wait_for(complete, timeout=20)
    ours = [s for s in spans if s.trace_id == trace_id]
    turns = [s for s in ours if s.name == TURN]
    assert len(turns) == 3 and all(t.parent_id == caller for t in turns), turns
    by_response = {t.attributes.get("durable_responses.response_id"): t for t in turns}
    assert set(rids) <= set(by_response), by_response
    (refused,) = [t for t in turns if t.attributes.get("http.response.status_code") == 404]
    assert "durable_responses.response_id" not in refused.attributes
    runs = [s for s in ours if s.name == RUN]
    for rid in rids:
        (run,) = [r for r in runs if r.parent_id == by_response[rid].span_id]
        # The turn's span covers the turn: from the message to its terminal event's send.
        assert by_response[rid].start <= run.start < by_response[rid].end
