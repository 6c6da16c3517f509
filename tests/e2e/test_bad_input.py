"""End-to-end tests of bad input: every rejection is a 4xx with the standard error body, and bad
input never damages stored responses. Runs on SQLite and PostgreSQL, against this module's shared
in-process servers (one per dialect, app and settings)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import openai
import pytest

from tests.support.inprocess import InProcessServer
from tests.support.responses import assert_error_shape, sse_get, wait_status

COUNTDOWN = "durable_responses.examples.countdown:countdown"


def test_bad_requests_and_tenancy(shared_server: InProcessServer) -> None:
    server = shared_server
    with httpx.Client(base_url=server.base_url, timeout=30) as c:
        # A stored response made before the bad input.
        good = c.post("/responses", json={"model": "m", "input": "keep me intact"})
        assert good.status_code == 200
        good_body = good.json()
        rid = good_body["id"]
        good_events = sse_get(server.base_url, f"/responses/{rid}", params={"stream": "true"})
        good_items = c.get(f"/responses/{rid}/input_items").json()

        # Malformed JSON.
        for raw in (b"{", b"not json", b'{"input": "x",}', b"\xff\xfe", b""):
            r = c.post("/responses", content=raw, headers={"content-type": "application/json"})
            assert_error_shape(r, 400)

        # Wrong types: 400 naming the parameter.
        for body, param in (
            ({"input": 5}, "input"),
            ({"input": "x", "stream": "yes"}, "stream"),
            ({"input": "x", "background": 1}, "background"),
            ({"input": "x", "store": "no"}, "store"),
            ({"input": "x", "model": 3}, "model"),
            ({"input": "x", "previous_response_id": 7}, "previous_response_id"),
            ({"input": "x", "tools": "get_weather"}, "tools"),
            ({"input": "x", "metadata": "m"}, "metadata"),
        ):
            err = assert_error_shape(c.post("/responses", json=body), 400)
            assert err["param"] is not None and err["param"].startswith(param), (body, err)
        # Not an object at all.
        for body in ([], "x", 3, None, True):
            assert_error_shape(c.post("/responses", json=body), 400)

        # Unknown top-level field.
        err = assert_error_shape(c.post("/responses", json={"input": "x", "frobnicate": True}), 400)
        assert err["param"] == "frobnicate"

        # Bad / unknown response ids in the path: 404 on every route.
        for bad_id in ("nope", "resp_" + "0" * 40, "resp_%20x", "x" * 300):
            assert_error_shape(c.get(f"/responses/{bad_id}"), 404)
            assert_error_shape(c.get(f"/responses/{bad_id}", params={"stream": "true"}), 404)
            assert_error_shape(c.post(f"/responses/{bad_id}/cancel"), 404)
            assert_error_shape(c.delete(f"/responses/{bad_id}"), 404)
            assert_error_shape(c.get(f"/responses/{bad_id}/input_items"), 404)
        assert_error_shape(c.get("/no/such/route"), 404)
        assert_error_shape(
            c.post("/responses", json={"input": "x", "previous_response_id": "resp_missing"}), 404
        )

        # Bad query params.
        assert_error_shape(c.get(f"/responses/{rid}/input_items", params={"limit": "0"}), 400)
        assert_error_shape(c.get(f"/responses/{rid}/input_items", params={"limit": "abc"}), 400)
        assert_error_shape(c.get(f"/responses/{rid}/input_items", params={"order": "up"}), 400)
        assert_error_shape(c.get(f"/responses/{rid}/input_items", params={"after": "msg_nope"}), 400)
        assert_error_shape(c.get(f"/responses/{rid}", params={"stream": "true", "starting_after": "-3"}), 400)
        assert_error_shape(
            c.post("/responses", json={"input": "x"}, headers={"x-agent-response-id": "bad id!"}), 400
        )

        # Tenancy: alice's response is invisible to bob.
        alice = {"x-agent-user-id": "alice"}
        bob = {"x-agent-user-id": "bob"}
        a = c.post("/responses", json={"model": "m", "input": "alice data"}, headers=alice)
        assert a.status_code == 200
        aid = a.json()["id"]
        abg = c.post(
            "/responses", json={"model": "m", "input": "alice bg", "background": True}, headers=alice
        )
        abg_id = abg.json()["id"]
        wait_status(server, abg_id, **alice)
        for target in (aid, abg_id):
            assert_error_shape(c.get(f"/responses/{target}", headers=bob), 404)
            assert_error_shape(c.get(f"/responses/{target}", params={"stream": "true"}, headers=bob), 404)
            assert_error_shape(c.post(f"/responses/{target}/cancel", headers=bob), 404)
            assert_error_shape(c.delete(f"/responses/{target}", headers=bob), 404)
            assert_error_shape(c.get(f"/responses/{target}/input_items", headers=bob), 404)
            assert_error_shape(
                c.post("/responses", json={"input": "steal", "previous_response_id": target}, headers=bob),
                404,
            )
            # And the default (no-header) user cannot see it either.
            assert_error_shape(c.get(f"/responses/{target}"), 404)
        # Bob cannot hijack alice's client-chosen id either.
        chosen = f"resp_chosen{uuid.uuid4().hex[:12]}"
        mine = c.post("/responses", json={"input": "a"}, headers={**alice, "x-agent-response-id": chosen})
        assert mine.status_code == 200
        # The id is taken, so bob cannot have it: a 409 that shows nothing of alice's response
        # (not her response, as an idempotent retry of her own would), with the same body or not.
        for body in ({"input": "a"}, {"input": "b"}):
            taken = c.post("/responses", json=body, headers={**bob, "x-agent-response-id": chosen})
            err = assert_error_shape(taken, 409)
            assert err["code"] == "duplicate_response_id", err
            assert "alice" not in taken.text and mine.json()["output"][0]["id"] not in taken.text, taken.text
        # Alice still sees her responses, untouched.
        assert c.get(f"/responses/{aid}", headers=alice).json()["output"] == a.json()["output"]
        assert c.get(f"/responses/{chosen}", headers=alice).status_code == 200
        # Invalid user id header.
        assert_error_shape(c.get(f"/responses/{aid}", headers={"x-agent-user-id": "u" * 300}), 400)

        # Everything stored earlier is intact.
        assert c.get(f"/responses/{rid}").json() == good_body
        assert sse_get(server.base_url, f"/responses/{rid}", params={"stream": "true"}) == good_events
        assert c.get(f"/responses/{rid}/input_items").json() == good_items


def test_body_limit_and_api_key(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(
        env={"DURABLE_RESPONSES_MAX_BODY_BYTES": "1000", "DURABLE_RESPONSES_API_KEY": "secret"}
    )
    ok_headers = {"authorization": "Bearer secret"}
    with httpx.Client(base_url=srv.base_url, timeout=30) as c:
        # Wrong / missing key: 401 on every route.
        for headers in (
            {},
            {"authorization": "Bearer wrong"},
            {"authorization": "secret"},
            {"authorization": "Basic secret"},
        ):
            assert_error_shape(c.post("/responses", json={"input": "x"}, headers=headers), 401)
            assert_error_shape(c.get("/responses/resp_abc", headers=headers), 401)
        good = c.post("/responses", json={"input": "authorised"}, headers=ok_headers)
        assert good.status_code == 200, good.text
        rid = good.json()["id"]
        assert_error_shape(c.get(f"/responses/{rid}", headers={"authorization": "Bearer wrong"}), 401)
        assert_error_shape(c.delete(f"/responses/{rid}", headers={"authorization": "Bearer wrong"}), 401)
        assert c.get(f"/responses/{rid}", headers=ok_headers).status_code == 200

        # Oversized body: 413 (declared length, and chunked without a length).
        big = {"input": "x" * 2000}
        assert_error_shape(c.post("/responses", json=big, headers=ok_headers), 413)

        def chunks() -> Any:
            yield b'{"input": "'
            for _ in range(20):
                yield b"y" * 100
            yield b'"}'

        r = c.post("/responses", content=chunks(), headers={**ok_headers, "content-type": "application/json"})
        assert_error_shape(r, 413)
        # Just under the limit works.
        assert c.post("/responses", json={"input": "z " * 100}, headers=ok_headers).status_code == 200
        assert c.get(f"/responses/{rid}", headers=ok_headers).json() == good.json()

    # The openai client: right key works, wrong key raises AuthenticationError.
    right = openai.OpenAI(base_url=srv.base_url, api_key="secret", max_retries=0)
    assert right.responses.create(model="m", input="sdk ok").output_text == "sdk ok"
    wrong = openai.OpenAI(base_url=srv.base_url, api_key="nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.responses.create(model="m", input="sdk no")
    with pytest.raises(openai.AuthenticationError):
        wrong.responses.retrieve(rid)


def test_continuation_conflicts(shared_servers: Any) -> None:
    """Continuing from an in-progress response with the `reject` strategy is a 409 (and creates
    nothing); once it finished,
    the continuation runs from its last checkpoint; the stored responses stay consistent."""
    srv: InProcessServer = shared_servers(COUNTDOWN)
    with httpx.Client(base_url=srv.base_url, timeout=30) as c:
        bg = c.post("/responses", json={"input": "8 delay=0.1", "background": True}).json()
        err = assert_error_shape(
            c.post(
                "/responses",
                json={"input": "1", "previous_response_id": bg["id"]},
                headers={"x-double-texting": "reject"},
            ),
            409,
        )
        assert err["code"] == "previous_response_in_progress" and bg["id"] in err["message"], err
        done = wait_status(srv, bg["id"])
        assert done["status"] == "completed"
        assert [o["content"][0]["text"] for o in done["output"]] == [f"tick {n}" for n in range(8, -1, -1)]
        # The finished workflow is restored from its last checkpoint and takes the new input.
        r = c.post("/responses", json={"input": "1 delay=0.01", "previous_response_id": bg["id"]})
        assert r.status_code == 200, r.text
        after = r.json()
        assert after["status"] == "completed" and after["previous_response_id"] == bg["id"], after
        assert [o["content"][0]["text"] for o in after["output"]] == ["tick 1", "tick 0"], after
        # The response it continued is unchanged.
        assert c.get(f"/responses/{bg['id']}").json() == done


def test_awkward_text_is_stored_or_rejected_cleanly(shared_server: InProcessServer) -> None:
    """NUL characters, lone surrogates, NaN and huge ints: a 200 that round-trips, or a clean 4xx."""
    raw_bodies = [
        b'{"model": "m", "input": "nul \\u0000 char"}',
        b'{"model": "m", "input": "lone \\ud800 surrogate"}',
        b'{"model": "m", "input": "ok", "metadata": {"k\\u0000": "v\\u0000"}}',
        b'{"model": "m", "input": "ok", "instructions": "\\udfff"}',
        b'{"model": "m", "input": "ok", "temperature": NaN}',
        b'{"model": "m", "input": "ok", "max_output_tokens": 1000000000000000000000000}',
        b'{"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": "a\\u0000b"}]}]}',
        b'{"model": "m", "input": "conv", "conversation": "c\\u0000"}',
    ]
    with httpx.Client(base_url=shared_server.base_url, timeout=30) as c:
        for raw in raw_bodies:
            for stream in (False, True):
                body = raw[:-1] + (b', "stream": true}' if stream else b"}")
                r = c.post("/responses", content=body, headers={"content-type": "application/json"})
                assert r.status_code < 500, (raw, stream, r.status_code, r.text[:300])
                if r.status_code >= 400:
                    assert_error_shape(r)
                    continue
                if stream:
                    continue
                rid = r.json()["id"]
                got = c.get(f"/responses/{rid}")
                assert got.status_code == 200, (raw, got.text[:300])
                assert got.json()["output"] == r.json()["output"]
                items = c.get(f"/responses/{rid}/input_items")
                assert items.status_code == 200, (raw, items.text[:300])
        # Pathologically deep nesting is a clean 400, not a RecursionError 500.
        deep = b'{"model": "m", "input": ' + b"[" * 100000 + b"]" * 100000 + b"}"
        assert_error_shape(
            c.post("/responses", content=deep, headers={"content-type": "application/json"}), 400
        )
        assert c.get("/readiness").status_code == 200


def test_principal_keys_are_walls_end_to_end(shared_servers: Any) -> None:
    """Two API keys, two principals: the same x-agent-user-id under another key is another user."""
    srv = shared_servers(env={"DURABLE_RESPONSES_API_KEYS": "alice:key-a,bob:key-b"})
    alice = httpx.Client(base_url=srv.base_url, headers={"authorization": "Bearer key-a"}, timeout=30)
    bob = httpx.Client(base_url=srv.base_url, headers={"authorization": "Bearer key-b"}, timeout=30)
    created = alice.post("/responses", json={"input": "hi"}, headers={"x-agent-user-id": "u1"})
    assert created.status_code == 200
    rid = created.json()["id"]
    assert alice.get(f"/responses/{rid}", headers={"x-agent-user-id": "u1"}).status_code == 200
    assert bob.get(f"/responses/{rid}", headers={"x-agent-user-id": "u1"}).status_code == 404
    assert httpx.get(f"{srv.base_url}/responses/{rid}", timeout=30).status_code == 401


def test_too_many_inflight_responses_is_429(shared_servers: Any) -> None:
    # A server of its own (no other test of this module uses these settings).
    srv = shared_servers(COUNTDOWN, env={"DURABLE_RESPONSES_MAX_INFLIGHT": "2"})
    c = httpx.Client(base_url=srv.base_url, timeout=30)
    for _ in range(2):
        assert c.post("/responses", json={"input": "20 delay=0.2", "background": True}).status_code == 200
    refused = c.post("/responses", json={"input": "1", "background": True})
    assert refused.status_code == 429
    assert set(refused.json()["error"]) == {"message", "type", "param", "code"}


def test_deeply_nested_body_is_a_400_not_a_500(shared_server: InProcessServer) -> None:
    server = shared_server
    """Regression (black-box probe): a reasoning item nested ~500 levels deep overflowed the
    recursive copies (RecursionError, 500); past 254 levels the stored JSON could not be encoded."""
    for depth in (300, 2000):
        nested = '{"a":' * depth + "{}" + "}" * depth  # (json.dumps itself would recurse too deep)
        raw = (
            '{"model": "m", "input": [{"type": "reasoning", "id": "rs_1", "summary": [], "x": '
            + nested
            + "}]}"
        )
        r = httpx.post(
            f"{server.base_url}/responses",
            content=raw.encode(),
            headers={"content-type": "application/json"},
            timeout=30,
        )
        err = assert_error_shape(r, 400)
        assert "levels deep" in err["message"], err
    # Ordinary nesting still works.
    ok = httpx.post(f"{server.base_url}/responses", json={"model": "m", "input": "hi"}, timeout=30)
    assert ok.status_code == 200, ok.text
