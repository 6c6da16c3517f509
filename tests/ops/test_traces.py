"""Traces, end to end: the real OTLP exporters send to a receiver on loopback.

One background response on a workflow of two real agents (agent-framework's `Agent` on its
OpenAI client, talking to `durable_responses.testing.FakeModel`) is killed with `kill -9` mid-run and
recovered by a second server; the receiver then holds one trace: the request span (whose parent
is the caller's `traceparent`), the run span of each life (the first emitted by the recovering
replica under the id its children name, the second linked to it), superstep and commit spans,
agent-framework's own spans (agents, model calls, the workflow) nested under a run span, its
inner workflow steps not made. OTLP metrics arrive too. A grpc smoke test checks the other
protocol, with the inner steps asked for (`DURABLE_RESPONSES_TRACE_EXECUTORS`).
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import httpx
from agent_framework.observability import OtelAttr

from durable_responses.observability.tracing import EXECUTOR_STEPS
from durable_responses.testing import FakeModel
from tests.support.responses import wait_status

from .conftest import start
from .otlp import GrpcReceiver, HttpReceiver, Span

WORKFLOW = "tests.agents.apps:sequential"
RUN = "durable_responses.run"


def _env(endpoint: str, **extra: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "durable-responses-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
        **extra,
    }


def _detail(base: str, rid: str) -> dict:  # type: ignore[type-arg]
    r = httpx.get(f"{base}/v1/admin/responses/{rid}", timeout=10)
    r.raise_for_status()
    return dict(r.json())


def _ancestors(span: Span, by_id: dict[str, Span]) -> list[Span]:
    out: list[Span] = []
    seen: set[str] = set()
    while span.parent_id in by_id and span.parent_id not in seen:
        seen.add(span.parent_id)
        span = by_id[span.parent_id]
        out.append(span)
    return out


def test_one_trace_for_a_response_killed_and_recovered(
    tmp_path: Path,
    servers: list,  # type: ignore[type-arg]
    database_url: str,
) -> None:
    url = database_url
    trace_id, caller = secrets.token_hex(16), secrets.token_hex(8)
    with FakeModel(token_delay=0.05) as fake, HttpReceiver() as otlp:
        env = {**fake.env(), **_env(otlp.endpoint)}
        first = start(servers, url, WORKFLOW, tmp_path, env=env, log_level="info")
        created = httpx.post(
            f"{first.base_url}/v1/responses",
            json={"model": "m", "input": "write a short note tokens=40", "background": True},
            headers={"traceparent": f"00-{trace_id}-{caller}-01"},
            timeout=30,
        )
        created.raise_for_status()
        rid = created.json()["id"]
        # Kill once the writer's superstep is paired with its checkpoint (the third: the input's,
        # the message to the writer's, the writer's) and the reviewer streams.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            d = _detail(first.base_url, rid)
            if len(d["supersteps"]) >= 3 and d["response"]["status"] == "in_progress":
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"no third superstep: {d['supersteps']}")
        steps = len(d["supersteps"])

        def first_life_exported(spans: list[Span]) -> bool:
            # The superstep spans of the checkpointed supersteps and the commit spans of their
            # checkpoints have reached the receiver (the exporter batches every 100 ms).
            ours = [s for s in spans if s.trace_id == trace_id]
            ended = sum(s.name == "durable_responses.superstep" for s in ours)
            committed = sum(
                s.attributes.get("durable_responses.writes", 0)
                for s in ours
                if s.name == "durable_responses.commit"
            )
            return ended >= steps and committed >= steps

        otlp.received.wait_for(first_life_exported, timeout=20)
        assert _detail(first.base_url, rid)["response"]["status"] == "in_progress"
        first.kill()
        second = start(servers, url, WORKFLOW, tmp_path, env=env, log_level="info")
        final = wait_status(second, rid, timeout=60)
        assert final["status"] == "completed", final

        def complete(spans: list[Span]) -> bool:
            ours = [s for s in spans if s.trace_id == trace_id]
            return sum(s.name == RUN for s in ours) >= 2 and any(
                s.name == "durable_responses.commit" and s.attributes.get("durable_responses.write") == "end"
                for s in ours
            )

        spans = otlp.received.wait_for(complete, timeout=20)
        metric_names = set(otlp.received.metric_names)
        second.terminate()

    ours = [s for s in spans if s.trace_id == trace_id]
    by_id = {s.span_id: s for s in ours}
    names = [s.name for s in ours]
    # The request span continues the caller's trace.
    (request,) = [s for s in ours if s.name == "POST /v1/responses"]
    assert request.parent_id == caller
    # One run span per life, both under the request; the second linked to the first.
    runs = sorted((s for s in ours if s.name == RUN), key=lambda s: s.attributes["durable_responses.life"])
    assert [r.attributes["durable_responses.life"] for r in runs] == [1, 2], names
    life1, life2 = runs
    assert life1.parent_id == request.span_id and life2.parent_id == request.span_id
    assert life1.attributes.get("durable_responses.interrupted") is True
    assert life1.attributes["durable_responses.replica"] != life2.attributes["durable_responses.replica"]
    assert [(t, s) for t, s, _ in life2.links] == [(trace_id, life1.span_id)]
    for r in runs:
        assert r.attributes["durable_responses.response_id"] == rid
        assert r.attributes["durable_responses.app"] and r.attributes["durable_responses.delivery"] == "live"
    # Supersteps of both lives, and commits at batch level: the creation, the end, and every
    # checkpoint in exactly one commit span (checkpoints durable together share one).
    supersteps = [s for s in ours if s.name == "durable_responses.superstep"]
    assert {s.parent_id for s in supersteps} == {life1.span_id, life2.span_id}
    commits = [s for s in ours if s.name == "durable_responses.commit"]
    writes = [s.attributes["durable_responses.write"] for s in commits]
    assert writes.count("create") == 1 and writes.count("end") == 1
    checkpointed = [
        s.attributes["durable_responses.writes"]
        for s in commits
        if "durable_responses.writes" in s.attributes
    ]
    assert writes.count("checkpoint") == len(checkpointed) >= 1
    assert sum(checkpointed) == len(supersteps)
    for c in commits:
        assert {a.span_id for a in _ancestors(c, by_id)} & {life1.span_id, life2.span_id}
    # Our spans never dangle: each one's parent is in the trace (or is the caller's span).
    for s in [request, *runs, *supersteps, *commits]:
        assert s.parent_id == caller or s.parent_id in by_id, s
    # agent-framework's own spans nest under a run span: agents, model calls, the workflow; its
    # inner workflow steps are not made unless asked (DURABLE_RESPONSES_TRACE_EXECUTORS).
    # (The workflow's span is `workflow.run` in agent-framework-core 1.23.0, `invoke_workflow` in 1.26.0.)
    for prefix in ("invoke_agent", "chat", OtelAttr.WORKFLOW_RUN_SPAN.value):
        nested = [s for s in ours if s.name.startswith(prefix) and life2 in _ancestors(s, by_id)]
        assert nested, (prefix, sorted(set(names)))
    assert not [n for n in names if n.startswith(EXECUTOR_STEPS)], sorted(set(names))
    # The first life's model calls are in the same trace; agent-framework's workflow span of
    # that life was still open at the kill, so it died with the process (its children name it).
    assert any(s.name.startswith("chat") and s.end < life2.start for s in ours), sorted(
        {s.name for s in ours if s.end < life2.start}
    )
    # No span carries the input text (agent-framework's sensitive data stays off).
    assert not any("short note" in str(v) for s in ours for v in s.attributes.values())
    # OTLP metrics, from the same exporter configuration.
    assert {"durable_responses_creations", "durable_responses_commit_seconds"} <= metric_names, metric_names


def test_grpc_exporter_smoke(tmp_path: Path, servers: list) -> None:  # type: ignore[type-arg]
    """The other protocol, with agent-framework's inner workflow steps asked for."""
    url = f"sqlite:///{tmp_path / 'db' / 'grpc.db'}"
    trace_id, caller = secrets.token_hex(16), secrets.token_hex(8)
    with FakeModel() as fake, GrpcReceiver() as otlp:
        env = {
            **fake.env(),
            **_env(otlp.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="grpc", OTEL_METRICS_EXPORTER="none"),
            "DURABLE_RESPONSES_TRACE_EXECUTORS": "true",
        }
        srv = start(servers, url, WORKFLOW, tmp_path, env=env)
        r = httpx.post(
            f"{srv.base_url}/v1/responses",
            json={"model": "m", "input": "hello over grpc"},
            headers={"traceparent": f"00-{trace_id}-{caller}-01"},
            timeout=30,
        )
        assert r.status_code == 200 and r.json()["status"] == "completed"
        # The request's span ends after the run's (the response is sent last): it may come in
        # a later export batch, so wait for both.
        spans = otlp.received.wait_for(
            lambda spans: {RUN, "POST /v1/responses"} <= {s.name for s in spans if s.trace_id == trace_id},
            timeout=20,
        )
        srv.terminate()
    ours = {s.name: s for s in spans if s.trace_id == trace_id}
    assert ours["POST /v1/responses"].parent_id == caller
    assert ours[RUN].parent_id == ours["POST /v1/responses"].span_id
    assert ours[RUN].service == "durable-responses-test"
    by_id = {s.span_id: s for s in spans if s.trace_id == trace_id}
    for step in EXECUTOR_STEPS:
        made = [s for s in ours.values() if s.name.startswith(step)]
        assert made and all(ours[RUN] in _ancestors(s, by_id) for s in made), (step, sorted(ours))


def test_usage_is_the_same_with_tracing_on(tmp_path: Path, servers: list) -> None:  # type: ignore[type-arg]
    """A response's usage is counted from the framework's model-call spans: with the exporting
    provider (lean spans for everything else, the framework's inner steps not made) it counts the
    same calls as without tracing, and the model-call spans are exported."""
    with FakeModel() as fake, HttpReceiver() as otlp:
        usages = []
        for traced in (False, True):
            env = {**fake.env(), **(_env(otlp.endpoint) if traced else {})}
            srv = start(servers, f"sqlite:///{tmp_path / f'u{traced}.db'}", WORKFLOW, tmp_path, env=env)
            body = httpx.post(
                f"{srv.base_url}/v1/responses", json={"model": "m", "input": "write a short note"}, timeout=60
            ).json()
            assert body["status"] == "completed", body
            usages.append(body["usage"])
            srv.terminate()
        spans = otlp.received.wait_for(
            lambda spans: sum(s.name.startswith("chat") for s in spans) >= 2, timeout=20
        )
    assert usages[0] == usages[1] and usages[0]["output_tokens"] > 0, usages
    assert sum(s.name.startswith("chat") for s in spans) == 2  # the two agents' calls, once each
