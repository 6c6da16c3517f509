"""A JSON request (stored, foreground, not streamed) whose client goes away before its response
ends: the server abandons the response (its run stops, `cancelled`: `Host.respond`); the 499
it answers reaches no one."""

from __future__ import annotations

import httpx
import pytest

from tests.support.inprocess import InProcessServer
from tests.support.responses import wait_terminal


def test_a_json_client_that_leaves_cancels_its_response(database_url: str) -> None:
    rid = "resp_json_client_leaves"
    with InProcessServer(database_url, "tests.surface.apps:waiting") as srv:
        # The run waits until stopped: the client's read gives up first and closes the connection.
        with httpx.Client(base_url=srv.base_url, timeout=httpx.Timeout(30, read=2)) as c:
            with pytest.raises(httpx.ReadTimeout):
                c.post(
                    "/v1/responses",
                    json={"model": "any", "input": "x"},
                    headers={"x-agent-response-id": rid},
                )
        assert wait_terminal(srv.client(), rid, 30).status == "cancelled"
