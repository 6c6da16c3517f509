"""`Idempotency-Key` (the IETF header) works like `x-agent-response-id`: a retry with the same key
and body returns the same response (the run is not repeated); the same key with another body is
a 422; another user's same key is another response (a key never reveals someone else's)."""

from __future__ import annotations

import httpx

from tests.support.inprocess import InProcessServer


def test_idempotency_key_returns_the_same_response(database_url: str) -> None:
    with InProcessServer(database_url) as srv, httpx.Client(base_url=srv.base_url, timeout=30) as c:
        body = {"model": "m", "input": "hello big world"}
        key = {"idempotency-key": "order-7f3a"}
        first = c.post("/v1/responses", json=body, headers=key)
        again = c.post("/v1/responses", json=body, headers=key)
        assert first.status_code == again.status_code == 200, (first.text, again.text)
        assert first.json()["id"] == again.json()["id"]
        assert again.json()["output"] == first.json()["output"]
        other = c.post("/v1/responses", json={**body, "input": "another"}, headers=key)
        assert other.status_code == 422, other.text
        assert other.json()["error"]["code"] == "idempotency_key_reused"
        bob = c.post("/v1/responses", json=body, headers={**key, "x-agent-user-id": "bob"})
        assert bob.status_code == 200 and bob.json()["id"] != first.json()["id"]
        # The key is scoped to its user: bob cannot read alice's response by guessing.
        assert (
            c.get(f"/v1/responses/{first.json()['id']}", headers={"x-agent-user-id": "bob"}).status_code
            == 404
        )
        assert c.post("/v1/responses", json=body, headers={"idempotency-key": ""}).status_code == 400
        stream = c.post("/v1/responses", json={**body, "stream": True}, headers={"idempotency-key": "s-1"})
        replayed = c.post("/v1/responses", json={**body, "stream": True}, headers={"idempotency-key": "s-1"})
        assert stream.status_code == replayed.status_code == 200
        assert stream.text.count("event: response.completed") == 1
        assert replayed.text == stream.text  # the same committed events, replayed
