"""Lean spans (server/observability/spans.py), in-process against the SDK's own span pipeline.

A provider like the one `tracing.configure` installs (`Exporting`), its spans collected by the
SDK's in-memory exporter: what a lean span exports must be what the SDK's own span exports for
the same calls (the OTLP encoding compared, ids and clock aside), sampling must decide as the
SDK decides, quiet names must leave no orphan, and model calls must stay SDK spans.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased, Sampler, TraceIdRatioBased
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from durable_responses.observability.spans import LeanSpan, LeanTracer, Recorder
from durable_responses.observability.tracing import EXECUTOR_STEPS, Exporting, is_model_call

RESOURCE = Resource.create({"service.name": "spans-test"})


class Counting(IdGenerator):
    """Ids 1, 2, 3...: two providers fed the same calls make the same ids."""

    def __init__(self) -> None:
        self.n = 0

    def generate_span_id(self) -> int:
        self.n += 1
        return self.n

    def generate_trace_id(self) -> int:
        self.n += 1
        return (1 << 100) + self.n


def lean(sampler: Sampler = ALWAYS_ON, quiet: tuple[str, ...] = ()) -> tuple[Exporting, InMemorySpanExporter]:
    out = InMemorySpanExporter()
    provider = Exporting(
        [SimpleSpanProcessor(out)], quiet, sampler=sampler, resource=RESOURCE, id_generator=Counting()
    )
    return provider, out


def sdk(sampler: Sampler = ALWAYS_ON) -> tuple[TracerProvider, InMemorySpanExporter]:
    out = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler, resource=RESOURCE, id_generator=Counting())
    provider.add_span_processor(SimpleSpanProcessor(out))
    return provider, out


@pytest.fixture(autouse=True)
def _clean_context() -> Iterator[None]:
    token = otel_context.attach(otel_context.Context())
    yield
    otel_context.detach(token)


def _story(tracer: trace.Tracer) -> None:
    """The calls the framework and the host make: nesting, attributes of every type, an event,
    a link, a status, an exception inside `start_as_current_span`, a span ended twice."""
    linked = SpanContext(7 << 64, 9, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with tracer.start_as_current_span(
        "workflow.run", kind=SpanKind.SERVER, attributes={"s": "x", "i": 3, "f": 1.5, "b": True}
    ) as run:
        run.set_attribute("list", [1, 2, 3])
        run.set_attributes({"strings": ("a", "b"), "late": "yes"})
        run.add_event("started", {"n": 1}, timestamp=5)
        child = tracer.start_span("durable_responses.superstep", links=[Link(linked, {"why": "previous"})])
        child.set_status(Status(StatusCode.ERROR, "it failed"))
        child.end(10)
        child.end(20)  # a second end changes nothing
        with pytest.raises(ValueError), tracer.start_as_current_span("executor work"):
            raise ValueError("boom")
        run.update_name("workflow.run renamed")
        run.set_status(StatusCode.OK)
        run.set_status(StatusCode.ERROR, "ignored: OK is final")


def _encoded(spans: tuple[ReadableSpan, ...]) -> Any:
    message = encode_spans(spans)
    for rs in message.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                span.start_time_unix_nano = span.end_time_unix_nano = 0
                for event in span.events:
                    event.time_unix_nano = 0
                    for kv in event.attributes:
                        if kv.key == "exception.stacktrace":  # the frames differ: one more in the SDK
                            assert kv.value.string_value.endswith("ValueError: boom\n")
                            kv.value.string_value = "..."
    return message


def test_a_lean_span_exports_what_the_sdk_span_exports() -> None:
    provider, out = lean()
    reference, expected = sdk()
    _story(provider.get_tracer("t", "1.0"))
    _story(reference.get_tracer("t", "1.0"))
    got, want = out.get_finished_spans(), expected.get_finished_spans()
    assert [s.name for s in got] == ["durable_responses.superstep", "executor work", "workflow.run renamed"]
    assert _encoded(got) == _encoded(want)
    # The same in what a reader of the span sees.
    run = got[-1]
    assert dict(run.attributes or {}) == {
        "s": "x",
        "i": 3,
        "f": 1.5,
        "b": True,
        "list": (1, 2, 3),
        "strings": ("a", "b"),
        "late": "yes",
    }
    assert run.status.status_code is StatusCode.OK and run.kind is SpanKind.SERVER
    failed = got[1]
    assert failed.status.status_code is StatusCode.ERROR
    assert [e.name for e in failed.events] == ["exception"]
    assert failed.events[0].attributes["exception.type"] == "ValueError"  # type: ignore[index]
    assert (
        got[0].end_time == 10 and got[0].parent is not None and got[0].parent.span_id == run.context.span_id
    )


def test_values_the_api_does_not_allow_are_dropped_and_limits_apply() -> None:
    provider, out = lean()
    span = provider.get_tracer("t").start_span(
        "s",
        attributes={
            "ok": "x",
            "none": None,  # type: ignore[dict-item]
            "object": object(),  # type: ignore[dict-item]
            "mixed": [1, "a"],
            "bytes": b"raw",  # type: ignore[dict-item]
            "empty": [],
        },
    )
    span.end()
    (done,) = out.get_finished_spans()
    assert dict(done.attributes or {}) == {"ok": "x", "empty": ()}
    recorder = Recorder(
        ALWAYS_ON, Counting(), RESOURCE, [], SpanLimits(max_span_attributes=2, max_attribute_length=3)
    )
    assert recorder.clean({"a": "abcdef", "b": ["xyz1", "q"], "c": 1}) == {"a": "abc", "b": ("xyz", "q")}


@pytest.mark.parametrize(
    ("sampler", "recorded"),
    [(ALWAYS_OFF, False), (ParentBased(ALWAYS_ON), True), (TraceIdRatioBased(0.0), False)],
)
def test_sampling_decides_as_the_sdk(sampler: Sampler, recorded: bool) -> None:
    provider, out = lean(sampler)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root") as root:
        child = tracer.start_span("child")
        grandchild = tracer.child(root, "ours", {"k": 1})  # type: ignore[attr-defined]
        child.end()
        grandchild.end()
    assert root.is_recording() is False  # ended
    assert isinstance(root, LeanSpan) is recorded
    assert len(out.get_finished_spans()) == (3 if recorded else 0)
    # A caller's unsampled traceparent: parent-based sampling records nothing under it.
    provider, out = lean(ParentBased(ALWAYS_ON))
    remote = TraceContextTextMapPropagator().extract({"traceparent": f"00-{'ab' * 16}-{'cd' * 8}-00"})
    span = provider.get_tracer("t").start_span("under an unsampled caller", context=remote)
    assert not span.is_recording() and span.get_span_context().trace_id == int("ab" * 16, 16)
    span.end()
    assert out.get_finished_spans() == ()


def test_quiet_names_are_not_made_and_what_they_wrap_nests_under_their_parent() -> None:
    provider, out = lean(quiet=EXECUTOR_STEPS)
    tracer = provider.get_tracer("agent_framework")
    with tracer.start_as_current_span("workflow.run") as run:
        with tracer.start_as_current_span("executor.process writer") as step:
            step.set_attribute("ignored", 1)
            assert not step.is_recording()
            assert step.get_span_context() == run.get_span_context()
            with tracer.start_as_current_span("invoke_agent writer"):
                pass
        tracer.start_span("message.send str").end()
        tracer.start_span("executor.processing is another name").end()
    names = {s.name: s for s in out.get_finished_spans()}
    assert set(names) == {"workflow.run", "invoke_agent writer", "executor.processing is another name"}
    assert names["invoke_agent writer"].parent.span_id == run.get_span_context().span_id  # type: ignore[union-attr]


def test_model_calls_stay_sdk_spans() -> None:
    provider, out = lean()
    tracer = provider.get_tracer("agent_framework")
    assert isinstance(tracer, LeanTracer)
    with tracer.start_as_current_span("invoke_agent a") as agent:
        call = tracer.start_span("chat gpt-test")
        assert isinstance(call, SdkSpan) and is_model_call("chat gpt-test")
        call.end()
        with tracer.start_as_current_span("chat") as bare:
            assert isinstance(bare, SdkSpan)
    spans = {s.name: s for s in out.get_finished_spans()}
    assert spans["chat gpt-test"].parent.span_id == agent.get_span_context().span_id  # type: ignore[union-attr]
    assert set(spans) == {"invoke_agent a", "chat gpt-test", "chat"}


def test_the_host_child_path_matches_start_span() -> None:
    provider, out = lean()
    tracer = provider.get_tracer("durable_responses")
    run = tracer.start_span("durable_responses.run")
    assert isinstance(tracer, LeanTracer)
    fast = tracer.child(run, "durable_responses.commit", {"durable_responses.write": "checkpoint"}, 5)
    fast.end(6)
    slow = tracer.start_span(
        "durable_responses.commit",
        trace.set_span_in_context(run),
        attributes={"durable_responses.write": "checkpoint"},
        start_time=5,
    )
    slow.end(6)
    a, b = out.get_finished_spans()
    assert (a.parent, a.attributes, a.kind, a.start_time, a.end_time, a.instrumentation_scope) == (
        b.parent,
        b.attributes,
        b.kind,
        b.start_time,
        b.end_time,
        b.instrumentation_scope,
    )
    assert a.context.trace_id == b.context.trace_id and a.context.span_id != b.context.span_id


def test_the_quiet_names_are_agent_frameworks() -> None:
    """EXECUTOR_STEPS names agent-framework's own span names (pinned: a rename upstream would
    silently trace them again)."""
    from agent_framework.observability import OtelAttr

    assert (
        OtelAttr.EXECUTOR_PROCESS_SPAN.value,
        OtelAttr.EDGE_GROUP_PROCESS_SPAN.value,
        OtelAttr.MESSAGE_SEND_SPAN.value,
    ) == EXECUTOR_STEPS


def test_checkpoints_durable_together_share_a_commit_span() -> None:
    """RunTrace: checkpoint writes whose futures resolve in the same turn of the event loop (one
    group commit) make one commit span, `writes` of them; a later one its own; a failure marks
    its batch."""
    import asyncio

    from durable_responses.runtime.run.telemetry import RunTrace

    provider, out = lean()
    tracer = provider.get_tracer("durable_responses")

    async def story() -> None:
        loop = asyncio.get_running_loop()
        run = RunTrace(tracer.start_span("durable_responses.run"), 0, tracer)
        futures = []
        for i in range(4):
            step = run.superstep(checkpoint_id=f"c{i}", iteration=i + 1, event_seq=i)
            futures.append(loop.create_future())
            run.checkpoint_commit(futures[-1], step)
        for f in futures[:3]:  # one group commit
            f.set_result(None)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        futures[3].set_exception(RuntimeError("disk full"))  # the next one, alone
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        futures[3].exception()  # retrieved

    asyncio.run(story())
    spans = out.get_finished_spans()
    supersteps = {s.context.span_id: s for s in spans if s.name == "durable_responses.superstep"}
    commits = [s for s in spans if s.name == "durable_responses.commit"]
    assert [dict(c.attributes or {}) for c in commits] == [
        {"durable_responses.write": "checkpoint", "durable_responses.writes": 3},
        {"durable_responses.write": "checkpoint", "durable_responses.writes": 1},
    ]
    first, last = commits
    assert supersteps[first.parent.span_id].attributes["durable_responses.checkpoint.id"] == "c0"  # type: ignore[union-attr,index]
    assert supersteps[last.parent.span_id].attributes["durable_responses.checkpoint.id"] == "c3"  # type: ignore[union-attr,index]
    assert first.status.status_code is StatusCode.UNSET and last.status.status_code is StatusCode.ERROR
    assert last.status.description == "RuntimeError"
