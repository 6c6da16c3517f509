"""What a new user meets first (issue 35's frictions): `make serve APP=...` serves the app named
and Ctrl+C ends it with 0 and no traceback; the countdown's self-loop warning shows once, not per
request; a client that runs tools in a loop stops after echo_agent's answer; a 405 says what is
allowed; health is served under `/v1` too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.inprocess import InProcessServer
from tests.support.servers import ROOT, free_port

ECHO_AGENT = "durable_responses.examples.echo_agent:echo_agent"
COUNTDOWN = "durable_responses.examples.countdown:countdown"


def test_make_serve_serves_the_app_named_and_ctrl_c_ends_it_cleanly(tmp_path: Path) -> None:
    port = free_port()
    venv = Path(sys.prefix)
    cmd = [
        "make",
        "--no-print-directory",
        "-C",
        str(ROOT),
        # The installed environment is this one: never reinstall it from here.
        "-o",
        str(venv / ".installed-serve"),
        "serve",
        f"VENV={venv}",
        f"APP={COUNTDOWN}",
        f"SERVE_ARGS=--port {port} --database-url sqlite:///{tmp_path / 'db.sqlite'}",
    ]
    # Its own session, so the SIGINT below reaches make and the server at once, as a
    # terminal's Ctrl+C does.
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.communicate()[0]
            try:
                if httpx.get(base + "/readiness", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "make serve did not become ready"
            time.sleep(0.1)
        assert [m["id"] for m in httpx.get(base + "/v1/models").json()["data"]] == ["countdown"]
        for i in range(3):
            body = {"model": "countdown", "input": f"1 delay=0 run {i}"}
            assert httpx.post(base + "/v1/responses", json=body, timeout=30).json()["status"] == "completed"
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    # The server stopped cleanly (exit 0: make reports no failed recipe, "*** [serve] Error
    # 130"); make got the Ctrl+C too and ends by it, or (when its recipe had already ended
    # cleanly by the time it looked) exits 0: both are a clean stop.
    assert proc.returncode in (0, -signal.SIGINT), out
    assert "***" not in out and "Error" not in out, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert "Application shutdown complete" in out, out
    # The framework warns about the countdown's (intended) self-loop at every build; the host
    # lets it through once per process, not once per request.
    assert out.count("Self-loop detected") == 1, out


def test_a_client_that_runs_tools_in_a_loop_stops_after_one_round(
    shared_servers: Callable[..., InProcessServer],
) -> None:
    """The loop every auto-executing client runs: answer each `function_call`, send the outputs
    back, until a response calls nothing. echo_agent used to call its tool again every time."""
    srv = shared_servers(ECHO_AGENT)
    client = srv.client()
    tools: Any = [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    ]
    response = client.responses.create(model="echo", input="call get_weather", tools=tools)
    rounds = 0
    while calls := [o for o in response.output if o.type == "function_call"]:
        rounds += 1
        assert rounds <= 3, "the agent keeps calling its tool"
        outputs: Any = [
            {"type": "function_call_output", "call_id": c.call_id, "output": "sunny"} for c in calls
        ]
        response = client.responses.create(
            model="echo", input=outputs, tools=tools, previous_response_id=response.id
        )
    assert rounds == 1
    assert response.output_text == "echo: get_weather returned sunny (turn 1)"


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with InProcessServer(f"sqlite:///{tmp_path_factory.mktemp('first-use') / 'db.sqlite'}") as srv:
        yield srv


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/responses/resp_x", "DELETE, GET, HEAD"),  # two routes: GET and DELETE
        ("PATCH", "/responses/resp_x", "DELETE, GET, HEAD"),
        ("GET", "/v1/responses", "POST"),
        ("POST", "/readiness", "GET, HEAD"),
        ("DELETE", "/v1/conversations/conv_x/items", "GET, HEAD, POST"),
    ],
)
def test_a_405_names_the_allowed_methods(echo: InProcessServer, method: str, path: str, allowed: str) -> None:
    r = httpx.request(method, echo.base_url + path)
    assert r.status_code == 405
    assert r.headers["allow"] == allowed
    error = r.json()["error"]
    assert error["message"] == f"Method {method} not allowed here; allowed: {allowed}."


@pytest.mark.parametrize("path", ["/readiness", "/liveness", "/v1/readiness", "/v1/liveness"])
def test_health_is_served_at_the_root_and_under_v1(echo: InProcessServer, path: str) -> None:
    r = httpx.get(echo.base_url + path)
    assert r.status_code == 200 and r.json()["status"] == ("ready" if "readiness" in path else "alive")
