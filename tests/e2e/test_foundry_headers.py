"""Foundry's headers reach the app's run, and tracing ids are echoed back."""

from __future__ import annotations

from typing import Any

import httpx


def test_foundry_call_id_reaches_the_run_and_ids_are_echoed(shared_servers: Any) -> None:
    srv = shared_servers("tests.apps.workflows:context_echo")
    headers = {
        "x-agent-user-id": "user-7",
        "x-agent-foundry-call-id": "call-123",
        "x-agent-session-id": "sess-9",
        "x-request-id": "req-42",
    }
    r = httpx.post(f"{srv.base_url}/responses", json={"input": "hi"}, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["x-request-id"] == "req-42"
    assert r.headers["x-agent-foundry-call-id"] == "call-123"
    text = r.json()["output"][0]["content"][0]["text"]
    assert text == "user=user-7 call=call-123 session=sess-9"
