"""Foundry hosted-agent parity: what azure-ai-agentserver-responses 2.3 / -core 2.2 honour,
matched here one test per row of the table in deploy/README.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from durable_responses.settings import Settings
from tests.support.inprocess import InProcessServer
from tests.support.responses import wait_status
from tests.support.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    db = tmp_path_factory.mktemp("parity") / "p.db"
    env = {
        "FOUNDRY_AGENT_NAME": "support-bot",
        "FOUNDRY_AGENT_VERSION": "3",
        "FOUNDRY_AGENT_SESSION_ID": "platform-session",
    }
    with InProcessServer(f"sqlite:///{db}", "durable_responses.examples.countdown:countdown", env=env) as s:
        yield s


def _post(srv: InProcessServer, body: dict[str, object], **headers: str) -> httpx.Response:
    return httpx.post(
        f"{srv.base_url}/v1/responses", json={"model": "any", **body}, headers=headers, timeout=30
    )


def test_user_id_partitions_every_read(srv: InProcessServer) -> None:
    rid = _post(srv, {"input": "1 delay=0"}, **{"x-agent-user-id": "u1"}).json()["id"]
    for method, path in (("GET", ""), ("GET", "/input_items"), ("POST", "/cancel"), ("DELETE", "")):
        other = httpx.request(
            method, f"{srv.base_url}/v1/responses/{rid}{path}", headers={"x-agent-user-id": "u2"}
        )
        assert other.status_code == 404, (method, path)
    assert (
        httpx.get(f"{srv.base_url}/v1/responses/{rid}", headers={"x-agent-user-id": "u1"}).status_code == 200
    )


def test_chat_isolation_key_partitions_per_chat(srv: InProcessServer) -> None:
    chat_a = {"x-agent-user-id": "u1", "x-agent-chat-isolation-key": "chat-a"}
    chat_b = {"x-agent-user-id": "u1", "x-agent-chat-isolation-key": "chat-b"}
    rid = _post(srv, {"input": "1 delay=0"}, **chat_a).json()["id"]
    assert httpx.get(f"{srv.base_url}/v1/responses/{rid}", headers=chat_a).status_code == 200
    assert httpx.get(f"{srv.base_url}/v1/responses/{rid}", headers=chat_b).status_code == 404
    assert (
        httpx.get(f"{srv.base_url}/v1/responses/{rid}", headers={"x-agent-user-id": "u1"}).status_code == 404
    )
    conv = httpx.post(f"{srv.base_url}/v1/conversations", json={}, headers=chat_a).json()["id"]
    assert httpx.get(f"{srv.base_url}/v1/conversations/{conv}", headers=chat_b).status_code == 404


def test_session_id_from_the_body_the_header_or_the_platform(srv: InProcessServer) -> None:
    r = _post(srv, {"input": "1 delay=0", "agent_session_id": "mine"})
    assert r.headers["x-agent-session-id"] == "mine" and r.json()["agent_session_id"] == "mine"
    rid = r.json()["id"]
    assert httpx.get(f"{srv.base_url}/v1/responses/{rid}").json()["agent_session_id"] == "mine"
    r = _post(srv, {"input": "1 delay=0"}, **{"x-agent-session-id": "from-header"})
    assert r.headers["x-agent-session-id"] == "from-header" and r.json()["agent_session_id"] == "from-header"
    r = _post(srv, {"input": "1 delay=0"})  # FOUNDRY_AGENT_SESSION_ID
    assert r.headers["x-agent-session-id"] == "platform-session"
    assert r.json()["agent_session_id"] == "platform-session"


def test_request_id_call_id_and_server_version_headers(srv: InProcessServer) -> None:
    r = _post(srv, {"input": "1 delay=0"}, **{"x-request-id": "req-1", "x-agent-foundry-call-id": "call-1"})
    assert r.headers["x-request-id"] == "req-1" and r.headers["x-agent-foundry-call-id"] == "call-1"
    generated = httpx.get(f"{srv.base_url}/readiness").headers["x-request-id"]
    assert (
        len(generated) == 32 and generated != httpx.get(f"{srv.base_url}/readiness").headers["x-request-id"]
    )
    assert "responses/2.0.0" in r.headers["x-platform-server"]


def test_client_chosen_response_id(srv: InProcessServer) -> None:
    r = _post(srv, {"input": "1 delay=0"}, **{"x-agent-response-id": "caresp_chosen1"})
    assert r.json()["id"] == "caresp_chosen1"
    again = _post(srv, {"input": "1 delay=0"}, **{"x-agent-response-id": "caresp_chosen1"})
    assert again.json()["id"] == "caresp_chosen1"


def test_status_codes_for_the_same_mistakes(srv: InProcessServer) -> None:
    base = f"{srv.base_url}/v1/responses"
    assert httpx.get(f"{base}/resp_unknown").status_code == 404
    assert (
        httpx.post(base, content=b"{not json", headers={"content-type": "application/json"}).status_code
        == 400
    )
    assert _post(srv, {"input": "x", "temperature": 9}).status_code == 400
    foreground = _post(srv, {"input": "1 delay=0"}).json()["id"]
    assert (
        httpx.post(f"{base}/{foreground}/cancel").status_code == 400
    )  # "Cannot cancel a synchronous response."
    done = _post(srv, {"input": "1 delay=0", "background": True}).json()["id"]
    assert wait_status(srv, done, timeout=10)["status"] == "completed"
    cancel_done = httpx.post(f"{base}/{done}/cancel")
    assert cancel_done.status_code == 400 and "Cannot cancel a completed response" in cancel_done.text
    running = _post(srv, {"input": "30 delay=0.2", "background": True}).json()["id"]
    assert httpx.delete(f"{base}/{running}").status_code == 400  # "Cannot delete an in-flight response."
    assert httpx.post(f"{base}/{running}/cancel").status_code == 200
    assert httpx.post(f"{base}/{running}/cancel").status_code == 200  # cancelling twice: same response


def test_models_name_the_foundry_agent(srv: InProcessServer) -> None:
    assert [m["id"] for m in httpx.get(f"{srv.base_url}/v1/models").json()["data"]] == ["support-bot:3"]


def test_platform_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    hosted = Settings.from_env(
        {"FOUNDRY_HOSTING_ENVIRONMENT": "production", "DURABLE_RESPONSES_DATA_DIR": "/x"}
    )
    assert hosted.store.database_url.startswith(f"sqlite:///{tmp_path}/.durable-responses/")
    s = Settings.from_env({"PORT": "9001", "SSE_KEEPALIVE_INTERVAL": "7", "FOUNDRY_AGENT_SESSION_ID": "s"})
    assert (s.http.port, s.http.keepalive_seconds, s.http.agent_session_id) == (9001, 7, "s")
    assert Settings.from_env({}).http.port == 8088


def test_shutting_down_is_503(tmp_path: Path) -> None:
    with InProcessServer(f"sqlite:///{tmp_path}/d.db") as s:
        assert s._loop is not None
        s._loop.call_soon_threadsafe(s.service.host.begin_shutdown)
        wait_until(lambda: not s.service.host.registry.accepting, 10, message="the host draining")
        r = httpx.post(f"{s.base_url}/v1/responses", json={"input": "hi"})
        assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable"


def test_protocol_version_declared() -> None:
    spec = yaml.safe_load((ROOT / "deploy/foundry/azure.yaml").read_text())
    protocols = spec["services"]["durable-responses"]["protocols"]
    assert {"protocol": "responses", "version": "2.0.0"} in protocols
