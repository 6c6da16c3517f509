"""End-to-end tests of the Responses HTTP API with the official openai client and raw httpx.

Every test runs on SQLite and PostgreSQL against this module's shared in-process servers (one
per dialect and app: `shared_server`, `shared_servers`); every response a test makes is its own.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import openai
import pytest

from tests.schema_validator import validate_event, validate_response
from tests.support.inprocess import InProcessServer
from tests.support.responses import assert_error_shape, dump, sse_get, wait_status
from tests.support.sse import parse_sse

ECHO_AGENT = "durable_responses.examples.echo_agent:echo_agent"
COUNTDOWN = "durable_responses.examples.countdown:countdown"
APPROVAL = "durable_responses.examples.approval:approval"


def check_events(events: list[Any]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        d = e if isinstance(e, dict) else dump(e)
        validate_event(d)
        out.append(d)
    return out


def item_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


# -- create / stream / background -------------------------------------------------------


def test_create_modes_and_replay(shared_server: InProcessServer) -> None:
    server = shared_server
    client = server.client()

    # Plain JSON.
    r = client.responses.create(model="echo", input="alpha beta")
    assert r.status == "completed" and r.output_text == "alpha beta"
    validate_response(dump(r))

    # Foreground stream.
    with client.responses.stream(model="echo", input="one two three") as stream:
        events = check_events(list(stream))
        final = stream.get_final_response()
    assert final.output_text == "one two three"
    validate_response(dump(final))
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"

    # Background (JSON): returns queued/in_progress, completes later.
    bg = client.responses.create(model="echo", input="back ground", background=True)
    validate_response(dump(bg))
    assert bg.background is True
    assert bg.status in ("queued", "in_progress", "completed")
    done = wait_status(server, bg.id)
    assert done["status"] == "completed"
    validate_response(done)
    got = client.responses.retrieve(bg.id)
    validate_response(dump(got))
    assert got.output_text == "back ground"

    # Background + stream.
    s = client.responses.create(model="echo", input="bg streamed words", background=True, stream=True)
    bg_events = check_events(list(s))
    assert [e["sequence_number"] for e in bg_events] == list(range(len(bg_events)))
    assert bg_events[-1]["type"] == "response.completed"
    bg_id = bg_events[0]["response"]["id"]
    assert client.responses.retrieve(bg_id).output_text == "bg streamed words"

    # Replay of a stored stream: full, and after N via the SDK's retrieve(stream=True).
    full = check_events(list(client.responses.retrieve(final.id, stream=True)))
    assert [e["sequence_number"] for e in full] == list(range(len(full)))
    assert [e["type"] for e in full] == [e["type"] for e in events]
    for n in (0, 2, len(full) - 2):
        tail = check_events(list(client.responses.retrieve(final.id, stream=True, starting_after=n)))
        assert [e["sequence_number"] for e in tail] == list(range(n + 1, len(full)))
        assert tail == full[n + 1 :]

    # The SDK's stream manager resuming an existing response.
    n = 3
    with client.responses.stream(response_id=final.id, starting_after=n) as resumed:
        seen = check_events(list(resumed))
        resumed_final = resumed.get_final_response()
    assert seen and all(e["sequence_number"] > n for e in seen)
    assert [e["sequence_number"] for e in seen] == list(range(n + 1, len(full)))
    assert resumed_final.output_text == "one two three"

    # Raw httpx: frame format and Last-Event-ID.
    frames = sse_get(server.base_url, f"/responses/{final.id}", params={"stream": "true"})
    assert len(frames) == len(full)
    for i, f in enumerate(frames):
        assert f.event is not None and f.id is not None and f.data
        assert f.event == f.json["type"]
        assert int(f.id) == f.json["sequence_number"] == i
        validate_event(f.json)
    with httpx.Client(base_url=server.base_url, timeout=30) as c:
        raw = c.get(f"/responses/{final.id}?stream=true").text
    for block in [b for b in raw.replace("\r\n", "\n").split("\n\n") if b.strip() and not b.startswith(":")]:
        lines = block.split("\n")
        assert any(line.startswith("event: ") for line in lines), block
        assert any(line.startswith("id: ") for line in lines), block
        assert any(line.startswith("data: ") for line in lines), block
    after_header = sse_get(
        server.base_url, f"/responses/{final.id}", params={"stream": "true"}, headers={"Last-Event-ID": "4"}
    )
    assert [int(f.id) for f in after_header] == list(range(5, len(full)))
    # Foreground POST stream frames (raw) have the same shape.
    with httpx.Client(base_url=server.base_url, timeout=30) as c:
        resp = c.post("/responses", json={"model": "echo", "input": "raw post", "stream": True})
        assert resp.status_code == 200
        post_frames = parse_sse(resp.text)
    assert [int(f.id) for f in post_frames] == list(range(len(post_frames)))
    assert all(f.event == f.json["type"] for f in post_frames)


def test_a_replay_with_nothing_after_its_start_ends_at_once(shared_servers: Any) -> None:
    """A reconnect to a finished response after its terminal event (or after a number beyond
    what any event has) gets an empty stream at once: not after the relay's timer for responses
    run elsewhere (a minute here on SQLite, 5 s on PostgreSQL), and not an error."""
    server = shared_servers(env={"DURABLE_RESPONSES_REMOTE_POLL_SECONDS": "60"})
    with httpx.Client(base_url=server.base_url, timeout=30) as c:
        rid = c.post("/responses", json={"model": "echo", "input": "one two", "background": True}).json()[
            "id"
        ]
        assert wait_status(server, rid)["status"] == "completed"
        last = int(sse_get(server.base_url, f"/responses/{rid}", params={"stream": "true"})[-1].id or -1)
        for after in (last, 10**12):
            # A stream that waited for the timer would outlast this read timeout.
            with c.stream(
                "GET", f"/responses/{rid}", params={"stream": "true", "starting_after": str(after)}, timeout=3
            ) as r:
                assert r.status_code == 200
                body = r.read().decode()
            assert "event:" not in body and "data:" not in body


def test_v1_prefix_health_and_delete(shared_server: InProcessServer) -> None:
    server = shared_server
    v1 = openai.OpenAI(base_url=server.base_url + "/v1", api_key="test-key", max_retries=0, timeout=60)
    r = v1.responses.create(model="echo", input="via v1")
    assert r.output_text == "via v1"
    assert v1.responses.retrieve(r.id).output_text == "via v1"
    assert server.client().responses.retrieve(r.id).id == r.id
    with httpx.Client(base_url=server.base_url, timeout=10) as c:
        for path in ("/readiness", "/liveness"):
            assert c.get(path).status_code == 200
        assert c.get(f"/v1/responses/{r.id}").json()["id"] == r.id
        items = c.get(f"/v1/responses/{r.id}/input_items").json()
        assert items["object"] == "list" and len(items["data"]) == 1

        # Delete: body, then 404 everywhere.
        d = c.delete(f"/v1/responses/{r.id}")
        assert d.status_code == 200
        assert d.json() == {"id": r.id, "object": "response", "deleted": True}
        assert_error_shape(c.get(f"/responses/{r.id}"), 404)
        assert_error_shape(c.delete(f"/responses/{r.id}"), 404)
        assert_error_shape(c.get(f"/responses/{r.id}/input_items"), 404)
    with pytest.raises(openai.NotFoundError):
        v1.responses.retrieve(r.id)
    # SDK delete too.
    r2 = v1.responses.create(model="echo", input="to delete")
    v1.responses.delete(r2.id)
    with pytest.raises(openai.NotFoundError):
        v1.responses.retrieve(r2.id)


# -- cancel -------------------------------------------------------------------------------


def test_cancel_running_background(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(COUNTDOWN)
    client = srv.client()
    for _ in range(4):
        bg = client.responses.create(model="c", input="30 delay=0.2", background=True)
        wait_status(srv, bg.id, {"in_progress"}, timeout=10)
        started = time.monotonic()
        c1 = client.responses.cancel(bg.id)
        assert time.monotonic() - started < 5
        validate_response(dump(c1))
        assert c1.status == "cancelled"
        c2 = client.responses.cancel(bg.id)
        assert c2.status == "cancelled" and c2.id == c1.id
        assert dump(c2) == dump(c1)
        assert client.responses.retrieve(bg.id).status == "cancelled"
        # The stored stream ends with a cancelled terminal event.
        evs = check_events(list(client.responses.retrieve(bg.id, stream=True)))
        # A cancelled response ends with `response.failed` carrying status `cancelled` (there is
        # no `response.cancelled` event in the protocol).
        assert evs[-1]["type"] == "response.failed" and evs[-1]["response"]["status"] == "cancelled", evs[-1]
        assert [e["type"] for e in evs].count("response.failed") == 1


def test_cancel(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(COUNTDOWN)
    client = srv.client()
    # Not background -> 400.
    fg = client.responses.create(model="c", input="1 delay=0.01")
    assert fg.status == "completed"
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(fg.id)
    with httpx.Client(base_url=srv.base_url, timeout=10) as c:
        assert_error_shape(c.post(f"/responses/{fg.id}/cancel"), 400)

    # Completed background -> 400 (as OpenAI and Foundry's hosting library answer).
    quick = client.responses.create(model="c", input="1 delay=0.01", background=True)
    wait_status(srv, quick.id)
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(quick.id)
    with httpx.Client(base_url=srv.base_url, timeout=10) as c:
        assert_error_shape(c.post(f"/responses/{quick.id}/cancel"), 400)

    # Foreground stream client disconnect -> the response ends cancelled.
    rid = None
    with httpx.Client(base_url=srv.base_url, timeout=30) as c:
        with c.stream(
            "POST", "/responses", json={"model": "c", "input": "50 delay=0.1", "stream": True}
        ) as resp:
            assert resp.status_code == 200
            buf = ""
            for chunk in resp.iter_text():
                buf += chunk
                frames = parse_sse(buf.rsplit("\n\n", 1)[0]) if "\n\n" in buf else []
                if frames and rid is None:
                    rid = frames[0].json["response"]["id"]
                if len(frames) >= 5:
                    break
    assert rid is not None
    final = wait_status(srv, rid, timeout=20)
    assert final["status"] == "cancelled", final["status"]
    assert len([o for o in final["output"] if o.get("type") == "message"]) < 50


# -- input items ---------------------------------------------------------------------------


def test_input_items_paging(shared_server: InProcessServer) -> None:
    server = shared_server
    client = server.client()
    items = [{"type": "message", "role": "user", "content": f"m{i}"} for i in range(150)]
    r = client.responses.create(model="echo", input=items)  # type: ignore[arg-type]
    assert r.status == "completed"
    expected = [f"m{i}" for i in range(150)]

    def texts(page_items: list[Any]) -> list[str]:
        return [item_text(dump(i)) for i in page_items]

    # SDK auto-pagination, both orders.
    asc = list(client.responses.input_items.list(r.id, order="asc"))
    assert texts(asc) == expected
    desc = list(client.responses.input_items.list(r.id, order="desc"))
    assert texts(desc) == expected[::-1]
    default = list(client.responses.input_items.list(r.id))
    assert len(default) == 150 and len({i.id for i in default}) == 150

    # Manual pages with limit=7 via `after`.
    for order, want in (("asc", expected), ("desc", expected[::-1])):
        seen: list[str] = []
        after = None
        pages = 0
        while True:
            kwargs: dict[str, Any] = {"limit": 7, "order": order}
            if after:
                kwargs["after"] = after
            page = client.responses.input_items.list(r.id, **kwargs)
            data = page.data
            assert len(data) <= 7
            seen += texts(data)
            pages += 1
            if not page.has_more:
                break
            assert len(data) == 7
            after = data[-1].id
        assert seen == want
        assert pages == (150 + 6) // 7
    # Raw body shape.
    body = httpx.get(f"{server.base_url}/responses/{r.id}/input_items?limit=7&order=asc", timeout=10).json()
    assert body["object"] == "list" and body["has_more"] is True
    assert body["first_id"] == body["data"][0]["id"] and body["last_id"] == body["data"][-1]["id"]


# -- multi-turn, tools ------------------------------------------------------------------------


def test_echo_agent_multi_turn_and_tools(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(ECHO_AGENT)
    client = srv.client()
    t1 = client.responses.create(model="a", input="hello")
    assert t1.output_text == "echo: hello (turn 1)"
    t2 = client.responses.create(model="a", input="again", previous_response_id=t1.id)
    assert t2.output_text == "echo: again (turn 2)"
    t3 = client.responses.create(model="a", input="third", previous_response_id=t2.id)
    assert t3.output_text == "echo: third (turn 3)"
    # Branching from turn 1 sees only turn 1.
    b = client.responses.create(model="a", input="branch", previous_response_id=t1.id)
    assert b.output_text == "echo: branch (turn 2)"
    # Streaming continuation.
    with client.responses.stream(model="a", input="streamed", previous_response_id=t2.id) as s:
        check_events(list(s))
        assert s.get_final_response().output_text == "echo: streamed (turn 3)"

    # Conversations: by extra_body and by the SDK's parameter.
    conv = f"conv_{uuid.uuid4().hex[:8]}"
    c1 = client.responses.create(model="a", input="c one", extra_body={"conversation": conv})
    assert c1.output_text == "echo: c one (turn 1)"
    c2 = client.responses.create(model="a", input="c two", conversation=conv)
    assert c2.output_text == "echo: c two (turn 2)"
    c3 = client.responses.create(model="a", input="c three", conversation={"id": conv})
    assert c3.output_text == "echo: c three (turn 3)"
    other = client.responses.create(model="a", input="fresh", conversation=f"conv_{uuid.uuid4().hex[:8]}")
    assert other.output_text == "echo: fresh (turn 1)"

    # Request tools reach the agent.
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
    fc = client.responses.create(model="a", input="call get_weather", tools=tools)  # type: ignore[arg-type]
    validate_response(dump(fc))
    calls = [o for o in fc.output if o.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert calls[0].call_id
    # Without the tool declared it just echoes.
    plain = client.responses.create(model="a", input="call get_weather")
    assert plain.output_text == "echo: call get_weather (turn 1)"


# -- approval workflow -----------------------------------------------------------------------


def test_approval_workflow(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(APPROVAL)
    client = srv.client()
    t1 = client.responses.create(model="w", input="deploy to prod")
    validate_response(dump(t1))
    calls = [o for o in t1.output if o.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "request_info"
    call_id = calls[0].call_id

    with httpx.Client(base_url=srv.base_url, timeout=30) as c:
        # Unknown call id -> 400.
        bad = c.post(
            "/responses",
            json={
                "model": "w",
                "previous_response_id": t1.id,
                "input": [{"type": "function_call_output", "call_id": "call_nope", "output": "approve"}],
            },
        )
        assert_error_shape(bad, 400)

    reply = [{"type": "function_call_output", "call_id": call_id, "output": "approve"}]
    t2 = client.responses.create(model="w", input=reply, previous_response_id=t1.id)  # type: ignore[arg-type]
    validate_response(dump(t2))
    assert t2.status == "completed"
    assert "Completed with decision: approve" in t2.output_text

    # Answering the same call again -> 409.
    with pytest.raises(openai.ConflictError):
        client.responses.create(model="w", input=reply, previous_response_id=t1.id)  # type: ignore[arg-type]
    with httpx.Client(base_url=srv.base_url, timeout=30) as c:
        again = c.post("/responses", json={"model": "w", "previous_response_id": t1.id, "input": reply})
        assert_error_shape(again, 409)

    # Streamed variant of the whole flow.
    with client.responses.stream(model="w", input="second request") as s:
        check_events(list(s))
        p = s.get_final_response()
    cid = next(o.call_id for o in p.output if o.type == "function_call")
    with client.responses.stream(
        model="w",
        input=[{"type": "function_call_output", "call_id": cid, "output": "reject"}],  # type: ignore[list-item]
        previous_response_id=p.id,
    ) as s:
        check_events(list(s))
        assert "Completed with decision: reject" in s.get_final_response().output_text


# -- store=false, idempotency ---------------------------------------------------------------


def test_store_false_and_idempotency(shared_server: InProcessServer) -> None:
    server = shared_server
    client = server.client()
    r = client.responses.create(model="echo", input="not stored", store=False)
    assert r.output_text == "not stored"
    validate_response(dump(r))
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)
    with client.responses.stream(model="echo", input="nor this", store=False) as s:
        evs = check_events(list(s))
        f = s.get_final_response()
    assert f.output_text == "nor this"
    assert [e["sequence_number"] for e in evs] == list(range(len(evs)))
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(f.id)

    rid = f"resp_{uuid.uuid4().hex}"
    body = {"model": "echo", "input": "same body"}
    with httpx.Client(base_url=server.base_url, timeout=30) as c:
        a = c.post("/responses", json=body, headers={"x-agent-response-id": rid})
        assert a.status_code == 200, a.text
        b = c.post("/responses", json=body, headers={"x-agent-response-id": rid})
        assert b.status_code == 200, b.text
        assert a.json()["id"] == b.json()["id"] == rid
        assert a.json()["output"] == b.json()["output"]
        assert a.json()["created_at"] == b.json()["created_at"]
        items = c.get(f"/responses/{rid}/input_items").json()
        assert len(items["data"]) == 1
        events = sse_get(server.base_url, f"/responses/{rid}", params={"stream": "true"})
        assert sum(1 for e in events if e.event == "response.created") == 1
        assert sum(1 for e in events if e.event == "response.completed") == 1
        diff = c.post(
            "/responses", json={"model": "echo", "input": "other body"}, headers={"x-agent-response-id": rid}
        )
        assert_error_shape(diff, 409)
        assert c.get(f"/responses/{rid}").json()["output"] == a.json()["output"]
    # Via the SDK too (extra header).
    rid2 = f"resp_{uuid.uuid4().hex}"
    x = client.responses.create(model="echo", input="sdk idem", extra_headers={"x-agent-response-id": rid2})
    y = client.responses.create(model="echo", input="sdk idem", extra_headers={"x-agent-response-id": rid2})
    assert x.id == y.id == rid2 and x.output_text == y.output_text
    with pytest.raises(openai.ConflictError):
        client.responses.create(model="echo", input="changed", extra_headers={"x-agent-response-id": rid2})


def test_sse_json_roundtrip_matches_retrieve(shared_server: InProcessServer) -> None:
    server = shared_server
    """The terminal event's response equals what retrieve returns afterwards."""
    with httpx.Client(base_url=server.base_url, timeout=30) as c:
        resp = c.post("/responses", json={"model": "echo", "input": "x y z", "stream": True})
        frames = parse_sse(resp.text)
        last = frames[-1].json
        assert last["type"] == "response.completed"
        got = c.get(f"/responses/{last['response']['id']}").json()
    validate_response(got)
    assert json.dumps(got["output"], sort_keys=True) == json.dumps(last["response"]["output"], sort_keys=True)
    assert got["status"] == "completed"
