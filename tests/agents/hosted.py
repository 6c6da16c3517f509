"""Shared checks for the hosted real-agent tests (`test_hosted_*.py`, `test_crash.py`).

The scenario apps (`tests/agents/apps.py`) run inside the real server, on agent-framework's real
OpenAI clients pointed at one `durable_responses.testing.FakeModel` per test module; the tests talk to the
server with the unmodified `openai` client. `Tee` keeps the raw SSE bytes the SDK's own stream
consumed, so a live stream is compared, payload by payload, with a full replay
(`GET /responses/{id}?stream=true`), and every raw event is validated against the Open
Responses schema. `mcp_approval_request` and `mcp_call` are OpenAI's items, not in that schema:
they are validated with the openai SDK's own `ResponseOutputItem` type (a pydantic TypeAdapter),
and the schema checks the event around them with a stand-in item.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI
from openai.types.responses import ResponseOutputItem
from openai.types.responses.response_output_item import McpApprovalRequest, McpCall
from pydantic import TypeAdapter

from durable_responses.testing import FakeModel, Usage
from tests.agents import apps
from tests.schema_validator import validate_event, validate_response
from tests.support.inprocess import InProcessServer
from tests.support.pg import drop_pg_database, new_pg_database
from tests.support.responses import wait_terminal
from tests.support.sse import TERMINAL_EVENT_TYPES, check_sequence, iter_frames, parse_sse

APIS = ["chat", "responses"]
DIALECTS = ["sqlite", "postgresql"]
# Servers that recover nothing need not look for work twice a second.
QUIET = {"DURABLE_RESPONSES_RECOVERY_INTERVAL": "5"}
# Words that only the framework's internal envelopes carry: a client must never see them.
INTERNALS = (
    "request_info",
    "HandoffAgentUserRequest",
    "AgentExecutorResponse",
    "agent_response",
    "full_conversation",
    "__pickled__",
    "executor_id",
)

_OUTPUT_ITEM = TypeAdapter(ResponseOutputItem)


# region fixtures (imported by the test modules)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeModel]:
    """One fake model server for the whole module (its calls are told apart with `mark()`)."""
    with FakeModel() as server:
        yield server


@pytest.fixture(params=APIS)
def api(
    request: pytest.FixtureRequest, fake: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> str:
    """Which agent-framework client the apps use: `chat` (OpenAIChatCompletionClient) or
    `responses` (OpenAIChatClient). The host builds the app anew for every run, and the app reads
    its client from the environment then: setting it here switches every server of the module."""
    fake.token_delay = 0.0
    for key, value in fake.env(str(request.param)).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(apps.TOOL_LOG_ENV, str(tmp_path / "tools.jsonl"))
    return str(request.param)


@pytest.fixture(params=DIALECTS)
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Servers:
    """In-process servers of one test module, one per (app, dialect), each on a fresh migrated
    database of its own, started on first use and stopped (databases dropped) at the module's
    end: a test's responses, conversations and tool log are its own, the start-up is shared."""

    def __init__(self, tmp: Path) -> None:
        self._tmp = tmp
        self._running: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[InProcessServer, Tee]] = {}
        self._pg: list[str] = []

    def get(self, app: str, dialect: str, env: dict[str, str] | None = None) -> Tee:
        """The server of `app` on `dialect` (with `env` on top of the defaults: another server)."""
        key = (app, dialect, tuple(sorted((env or {}).items())))
        if key not in self._running:
            if dialect == "sqlite":
                url = f"sqlite:///{self._tmp / f'{app}-{len(self._running)}.db'}"
            else:
                url = new_pg_database(migrated=True)
                self._pg.append(url)
            srv = InProcessServer(url, app=f"tests.agents.apps:{app}", env={**QUIET, **(env or {})})
            srv.start()
            self._running[key] = (srv, Tee(srv.base_url))
        tee = self._running[key][1]
        tee.bodies.clear()
        return tee

    def close(self) -> None:
        def stop(running: tuple[InProcessServer, Tee]) -> None:
            running[1].close()
            running[0].stop()

        with ThreadPoolExecutor(max_workers=max(1, len(self._running), len(self._pg))) as pool:
            list(pool.map(stop, self._running.values()))  # each waits for its own drain
            self._running.clear()
            list(pool.map(drop_pg_database, self._pg))
        self._pg.clear()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    running = Servers(tmp_path_factory.mktemp("servers"))
    try:
        yield running
    finally:
        running.close()


def tool_runs(tmp_path: Path, name: str | None = None) -> list[dict[str, Any]]:
    """The tool executions the apps logged (`AGENT_TOOL_LOG`), optionally of one tool."""
    log = tmp_path / "tools.jsonl"
    runs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [r for r in runs if name is None or r["tool"] == name]


# region the openai client, with the raw bytes of its streams kept


class _TeeStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, sink: bytearray) -> None:
        self._inner = inner
        self._sink = sink

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._sink.extend(chunk)
            yield chunk

    def close(self) -> None:
        self._inner.close()


class _TeeTransport(httpx.BaseTransport):
    def __init__(self, tee: Tee) -> None:
        self._inner = httpx.HTTPTransport()
        self._tee = tee

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        sink = bytearray()
        self._tee.bodies.append(sink)
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_TeeStream(response.stream, sink),
            extensions=response.extensions,
            request=request,
        )

    def close(self) -> None:
        self._inner.close()


class Tee:
    """A server's clients: `client`, an `openai.OpenAI` whose SSE response bodies are also kept,
    raw (`last_events`), and `http`, a plain httpx client for replays and refused requests."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.bodies: list[bytearray] = []
        self.http = httpx.Client(base_url=base_url, timeout=60, headers={"authorization": "Bearer k"})
        self.client = OpenAI(
            base_url=base_url + "/v1",
            api_key="test-key",
            max_retries=0,
            http_client=httpx.Client(transport=_TeeTransport(self), timeout=60),
        )

    def last_events(self) -> list[dict[str, Any]]:
        """The events of the last SSE body the client read, as the server sent them."""
        assert self.bodies, "the client read no SSE stream"
        frames = parse_sse(bytes(self.bodies[-1]).decode())
        for f in frames:
            assert f.event == f.json["type"], f"SSE event: {f.event} but data type {f.json['type']}"
            assert f.id == str(f.json["sequence_number"]), f"SSE id {f.id} != {f.json['sequence_number']}"
        return [f.json for f in frames if f.json is not None]

    def replay(self, rid: str) -> list[dict[str, Any]]:
        """`GET /v1/responses/{rid}?stream=true`: every stored event, until the terminal one."""
        out: list[dict[str, Any]] = []
        with self.http.stream("GET", f"/v1/responses/{rid}", params={"stream": "true"}) as r:
            r.raise_for_status()
            for f in iter_frames(r.iter_lines()):
                if f.json is None:
                    continue
                assert f.event == f.json["type"] and f.id == str(f.json["sequence_number"]), f
                out.append(f.json)
                if f.json["type"] in TERMINAL_EVENT_TYPES:
                    break
        return out

    def post(self, body: dict[str, Any]) -> httpx.Response:
        """A raw `POST /v1/responses` (to see a refusal's status and error body as sent)."""
        return self.http.post("/v1/responses", json=body)

    def close(self) -> None:
        self.client.close()
        self.http.close()


# region schema validation


def check_mcp_item(item: dict[str, Any]) -> None:
    """An `mcp_approval_request` or `mcp_call` as the openai SDK's own type defines it (neither
    is in the Open Responses schema): every field the type requires, none it does not know."""
    parsed = _OUTPUT_ITEM.validate_python(item)
    kind = McpApprovalRequest if item["type"] == "mcp_approval_request" else McpCall
    assert isinstance(parsed, kind), type(parsed)
    assert set(item) <= set(kind.model_fields), set(item) - set(kind.model_fields)
    assert item["id"] and item["name"] and item["server_label"], item
    json.loads(item["arguments"])


def _stand_in(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("type") not in ("mcp_approval_request", "mcp_call"):
        return item
    check_mcp_item(item)
    return {"type": "message", "id": item["id"], "role": "assistant", "status": "completed", "content": []}


def _response_for_schema(response: dict[str, Any]) -> dict[str, Any]:
    return {**response, "output": [_stand_in(i) for i in response.get("output", [])]}


def check_event(event: dict[str, Any]) -> None:
    """One streaming event against the Open Responses schema (see the module docstring)."""
    event = dict(event)
    if isinstance(event.get("item"), dict):
        event["item"] = _stand_in(event["item"])
    if isinstance(event.get("response"), dict):
        event["response"] = _response_for_schema(event["response"])
    validate_event(event)


def check_response_body(body: dict[str, Any]) -> None:
    validate_response(_response_for_schema(body))


def check_events(events: list[dict[str, Any]]) -> None:
    """Every event valid; each text streamed as deltas that add up to its done text; nothing of
    the framework's internals shown."""
    deltas: dict[str, list[str]] = {}
    for e in events:
        check_event(e)
        if e["type"] == "response.output_text.delta":
            deltas.setdefault(e["item_id"], []).append(e["delta"])
        elif e["type"] == "response.output_text.done":
            assert "".join(deltas.get(e["item_id"], [])) == e["text"], e
    shown = json.dumps([e for e in events if e["type"] not in ("response.created", "response.in_progress")])
    for word in INTERNALS:
        assert word not in shown, f"a framework internal ({word}) reached the client: {shown[:2000]}"


def deltas_per_item(events: list[dict[str, Any]]) -> dict[str, int]:
    return dict(Counter(e["item_id"] for e in events if e["type"] == "response.output_text.delta"))


# region one turn, checked


def usage_of(response: Any) -> Usage:
    u = response.usage
    assert u is not None, f"response {response.id} has no usage"
    return Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        reasoning_tokens=u.output_tokens_details.reasoning_tokens,
        cached_tokens=u.input_tokens_details.cached_tokens,
    )


@dataclass
class Turn:
    """A response driven to its end, with its live events and the model calls it made."""

    response: Any  # openai Response (as retrieved after the end)
    events: list[dict[str, Any]]  # the raw live events (or the replay, for background runs)
    calls: Counter[str]  # model calls per agent name
    billed: Usage  # what the fake reported for them

    @property
    def types(self) -> list[str]:
        return [i.type for i in self.response.output]

    def items(self, kind: str) -> list[Any]:
        return [i for i in self.response.output if i.type == kind]

    @property
    def texts(self) -> list[str]:
        return [c.text for i in self.items("message") for c in i.content if c.type == "output_text"]


def check_replay(tee: Tee, rid: str, live: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The full replay passes `check_sequence` and equals the live stream, payload for payload."""
    replay = tee.replay(rid)
    check_sequence(replay, label=rid)
    assert len(replay) == len(live), (len(replay), len(live))
    for seen, stored in zip(live, replay, strict=True):
        assert seen == stored, f"live and replay differ at {seen.get('sequence_number')}:\n{seen}\n{stored}"
    return replay


def finish_turn(tee: Tee, fake: FakeModel, mark: int, rid: str, live: list[dict[str, Any]]) -> Turn:
    """The checks every turn passes: events valid, replay == live, the stored Response valid and
    equal to the terminal event's, usage == what the fake model billed for the turn's calls."""
    check_events(live)
    check_replay(tee, rid, live)
    body = tee.http.get(f"/v1/responses/{rid}").json()
    check_response_body(body)
    terminal = live[-1]
    assert terminal["type"] in TERMINAL_EVENT_TYPES, terminal["type"]
    assert body["output"] == terminal["response"]["output"], "GET and the terminal event disagree"
    response = tee.client.responses.retrieve(rid)
    calls = fake.calls_since(mark)
    assert all(c.finished for c in calls), "a model call was still streaming when the response ended"
    client_api = os.environ.get(apps.FAKE_MODEL_API_ENV, "chat")
    assert {c.api for c in calls} <= {client_api}, f"calls over {[c.api for c in calls]}, not {client_api}"
    billed = fake.usage_total(since=mark)
    assert usage_of(response) == billed, f"usage {usage_of(response)} != billed {billed}"
    return Turn(response, live, Counter(c.agent or "?" for c in calls), billed)


def stream_turn(tee: Tee, fake: FakeModel, **kwargs: Any) -> Turn:
    """One turn streamed with the SDK's `responses.stream(...)` helper, then checked (`finish_turn`)."""
    mark = fake.mark()
    kwargs.setdefault("model", "fake-model")
    with tee.client.responses.stream(**kwargs) as stream:
        last = None
        for event in stream:
            last = event
        assert last is not None and last.type in TERMINAL_EVENT_TYPES, last
        if last.type == "response.completed":  # the SDK's helper keeps only a completed response
            assert stream.get_final_response().id == last.response.id
    live = tee.last_events()
    rid = live[0]["response"]["id"]
    assert live[0]["type"] == "response.created" and rid == last.response.id
    return finish_turn(tee, fake, mark, rid, live)


def background_turn(tee: Tee, fake: FakeModel, timeout: float = 60, **kwargs: Any) -> Turn:
    """One background turn (not streamed): waited for, then its replay checked as its stream."""
    mark = fake.mark()
    kwargs.setdefault("model", "fake-model")
    created = tee.client.responses.create(background=True, **kwargs)
    wait_terminal(tee.client, created.id, timeout)
    return finish_turn(tee, fake, mark, created.id, tee.replay(created.id))


def approval_answer(request_id: str, approve: bool, reason: str | None = None) -> list[dict[str, Any]]:
    answer: dict[str, Any] = {
        "type": "mcp_approval_response",
        "approval_request_id": request_id,
        "approve": approve,
    }
    if reason is not None:
        answer["reason"] = reason
    return [answer]
