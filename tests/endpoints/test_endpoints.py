"""Endpoints alone: each is a module-level function that reads its collaborators from the app's
state (`kit.HttpState`), so it runs against a real host (SQLite) without the route table,
called with a request built by hand; failures are answered by class (`failures`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from durable_responses.http import admin, app, conversations, failures, surface
from durable_responses.http.kit import HttpState
from durable_responses.protocol import errors
from durable_responses.service import Service, build
from durable_responses.settings import Settings


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    settings = Settings.from_env({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"})
    svc = build(settings)
    yield svc
    asyncio.run(svc.store.close())


def _request(
    state: HttpState,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    **params: str,
) -> Request:
    """A request as the router would pass it, for an app that holds only `state`."""
    bare = Starlette()
    bare.state.http = state
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {
        "type": "http",
        "method": method,
        "path": path.partition("?")[0],
        "query_string": path.partition("?")[2].encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "app": bare,
        "path_params": params,
    }
    return Request(scope, receive)


def _json(response: Response) -> Any:
    return json.loads(bytes(response.body))


def test_a_model_list_reads_the_host_from_the_app_state(service: Service) -> None:
    state = HttpState.of(service.host, service.app.state.http.settings)
    listed = _json(asyncio.run(surface.list_models(_request(state, "GET", "/models"))))
    assert [m["id"] for m in listed["data"]] == [state.model_id]
    one = asyncio.run(surface.get_model(_request(state, "GET", "/models/x", model_id=state.model_id)))
    assert _json(one)["id"] == state.model_id


def test_an_endpoint_refuses_alone_what_it_cannot_take(service: Service) -> None:
    state = service.app.state.http
    with pytest.raises(errors.ProtocolError) as bad:
        asyncio.run(app.create(_request(state, "POST", "/responses", b'{"input": ')))
    assert bad.value.status == 400 and bad.value.code == "invalid_json"
    with pytest.raises(errors.ProtocolError) as missing:
        asyncio.run(surface.compact(_request(state, "POST", "/responses/compact", b"{}")))
    assert missing.value.param == "previous_response_id"
    with pytest.raises(errors.ProtocolError) as unknown:
        asyncio.run(conversations.retrieve(_request(state, "GET", "/c", conversation_id="nope")))
    assert unknown.value.status == 404
    with pytest.raises(errors.ProtocolError) as limit:
        asyncio.run(admin.list_responses(_request(state, "GET", "/r?limit=x")))
    assert limit.value.param == "limit"


def test_the_admin_key_reads_every_tenant(service: Service) -> None:
    settings = service.app.state.http.settings.model_copy(update={"admin_key": "k"})
    state = HttpState.of(service.host, settings)
    keyed = _request(state, "GET", "/", headers={"authorization": "Bearer k"})
    assert admin.scope_of(keyed) is None
    other = _request(state, "GET", "/", headers={"authorization": "Bearer nope", "x-agent-user-id": "u"})
    assert admin.scope_of(other) == "u"


def _failing(exc: Exception) -> Starlette:
    async def boom(request: Request) -> Response:
        raise exc

    return Starlette(
        routes=[Route("/boom", boom, methods=["GET", "POST"])],
        exception_handlers=dict(failures.HANDLERS),
        middleware=app._middleware(Settings.from_env({}).http),
    )


def test_failures_are_answered_by_class() -> None:
    refused = TestClient(_failing(errors.conflict("taken", code="c"))).post("/boom")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "c"
    assert refused.headers["x-should-retry"] == "false"
    crashed = TestClient(_failing(RuntimeError("bug")), raise_server_exceptions=False).post("/boom")
    assert crashed.status_code == 500 and crashed.json()["error"]["type"] == "server_error"
    assert crashed.headers["x-should-retry"] == "false"
    read = TestClient(_failing(RuntimeError("bug")), raise_server_exceptions=False).get("/boom")
    assert read.status_code == 500 and "x-should-retry" not in read.headers
