"""A response's spans: one run span per life, its supersteps and commits, recovery's link.

Job: `Telemetry.first_life` starts the run span of a new response (under the request's span,
the caller's `traceparent` above it) and gives the trace context to store with the response;
`Telemetry.next_life` starts the run span of a recovered one in the same trace, linked to the
life before, and emits that life's own run span, which its dead process never ended, under the
id its children already name. `RunTrace` is what a run records into: supersteps (one span per
checkpoint, from the boundary before it), commits (a span per awaited write, the creation and
the end, and one per batch of checkpoints, each with its outputs, that became durable together)
and the run's end.

Invariants:
- A life ends its own run span only when it recorded the response's end; any other life
  (abandoned, handed over, killed) leaves it to the next life's recovery, so every life's span
  is emitted exactly once, ended by whoever knows how it ended.
- With tracing off every method is a no-op (`NO_TRACE`): no span, no clock read, nothing stored.
- Spans name the response, the app, the replica and the delivery mode; never input or output.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ...observability import tracing

__all__ = ["NO_TRACE", "RunTrace", "Telemetry"]

RUN = "durable_responses.run"
SUPERSTEP = "durable_responses.superstep"
COMMIT = "durable_responses.commit"
RECOVER = "durable_responses.recover"
WEBHOOK = "durable_responses.webhook"
ATTR = "durable_responses."
_ITERATION = ATTR + "workflow.iteration"
_CHECKPOINT_ID = ATTR + "checkpoint.id"
_EVENT_SEQ = ATTR + "event_seq"
_WRITE = ATTR + "write"
_WRITES = ATTR + "writes"
_PROPAGATOR = TraceContextTextMapPropagator()


class RunTrace:
    """The spans of one life of one response (tracing on)."""

    def __init__(self, span: trace.Span, start_ns: int, tracer: trace.Tracer | None = None) -> None:
        self.span = span
        self._tracer = tracer or tracing.tracer()  # what makes its children
        self._boundary = start_ns
        self._closed = False
        # Checkpoint writes durable since the last `_land` (start, superstep span, failure).
        self._landing: list[tuple[int, trace.Span | None, str | None]] = []

    @property
    def span_id(self) -> str:
        return format(self.span.get_span_context().span_id, "016x")

    @contextlib.contextmanager
    def activate(self) -> Iterator[None]:
        """The run span is the current span inside (agent-framework's spans nest under it)."""
        with trace.use_span(
            self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
        ):
            yield

    def child(self, name: str, **attributes: Any) -> trace.Span:
        return tracing.child_span(self.span, name, _attrs(attributes), via=self._tracer)

    def superstep(self, *, checkpoint_id: str, iteration: int, event_seq: int) -> trace.Span | None:
        """The superstep that just ended with checkpoint `checkpoint_id` (a span from the last
        boundary to now); returns it, as the parent of the checkpoint's commit. Few attributes:
        each one costs ~6 us to export (the SDK's OTLP encoder; the span ~40 us); the checkpoint
        id names the superstep in the operator view (`/v1/admin`: its bytes, events, the items
        it closed)."""
        now = time.time_ns()
        span = tracing.child_span(
            self.span,
            SUPERSTEP,
            {
                _ITERATION: iteration,
                _CHECKPOINT_ID: checkpoint_id,
                _EVENT_SEQ: event_seq,
            },
            self._boundary,
            self._tracer,
        )
        span.end(now)
        self._boundary = now
        return span

    def checkpoint_commit(self, future: asyncio.Future[None], superstep: trace.Span | None) -> None:
        """The commit of a superstep's checkpoint write (`future` resolves once it is durable).

        One span per batch: the checkpoint writes of this life that became durable together
        (one group commit: their futures resolve in the same turn of the event loop) share a
        span, under the first one's superstep, from the first one's start, `writes` saying how
        many. A countdown's writer commits ~6 checkpoints at a time: a span each cost ~4% of
        its superstep with tracing on; a superstep that waits on a model commits alone.
        """
        start = time.time_ns()

        def done(f: asyncio.Future[None]) -> None:
            if not self._landing:
                asyncio.get_running_loop().call_soon(self._land)
            error = None if f.cancelled() else f.exception()
            failure = "cancelled" if f.cancelled() else type(error).__name__ if error else None
            self._landing.append((start, superstep, failure))

        future.add_done_callback(done)

    def _land(self) -> None:
        batch, self._landing = self._landing, []
        first, parent, _ = batch[0]
        span = tracing.child_span(
            parent or self.span, COMMIT, {_WRITE: "checkpoint", _WRITES: len(batch)}, first, self._tracer
        )
        failures = [f for _, _, f in batch if f]
        if failures:
            span.set_status(Status(StatusCode.ERROR, failures[0]))
        span.end()

    @contextlib.contextmanager
    def committing(self, kind: str, **attrs: Any) -> Iterator[None]:
        """A span around an awaited write (the creation, the end)."""
        span = tracing.child_span(self.span, COMMIT, _attrs({"write": kind, **attrs}), via=self._tracer)
        try:
            yield
        except BaseException as exc:
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            span.end()

    def close(self, status: str | None) -> None:
        """The life is over: end the run span if it recorded the response's end (`status`),
        else leave it to the next life (see the module's invariants)."""
        if self._closed:
            return
        self._closed = True
        if status is None:
            return
        self.span.set_attribute(ATTR + "status", status)
        if status in ("failed", "cancelled"):
            self.span.set_status(Status(StatusCode.ERROR, status))
        self.span.end()


class _NoTrace(RunTrace):
    """Tracing off: nothing is recorded."""

    def __init__(self) -> None:
        self._closed = True

    @property
    def span_id(self) -> str:
        return ""

    @contextlib.contextmanager
    def activate(self) -> Iterator[None]:
        yield

    def child(self, name: str, **attributes: Any) -> trace.Span:
        return trace.INVALID_SPAN

    def superstep(self, **kwargs: Any) -> None:
        return None

    def checkpoint_commit(self, future: asyncio.Future[None], superstep: trace.Span | None) -> None:
        return None

    @contextlib.contextmanager
    def committing(self, kind: str, **attrs: Any) -> Iterator[None]:
        yield

    def close(self, status: str | None) -> None:
        return None


NO_TRACE: RunTrace = _NoTrace()


def _attrs(values: dict[str, Any]) -> dict[str, Any]:
    return {ATTR + k: v for k, v in values.items() if v is not None}


class Telemetry:
    """Starts the run span of each life of a response (see the module docstring)."""

    def __init__(self, app: str, replica: str) -> None:
        self.app = app
        self.replica = replica

    @property
    def on(self) -> bool:
        return tracing.enabled()

    def _run_attributes(self, response_id: str, life: int, delivery: str, background: bool) -> dict[str, Any]:
        return _attrs(
            {
                "response_id": response_id,
                "app": self.app,
                "replica": self.replica,
                "delivery": delivery,
                "background": background,
                "life": life,
            }
        )

    def first_life(self, response_id: str, *, delivery: str, background: bool) -> tuple[RunTrace, str | None]:
        """The run span of a new response, under the current (request) span, and the trace
        context to store with it (None: tracing off)."""
        if not tracing.enabled():
            return NO_TRACE, None
        parent = otel_context.get_current()
        start = time.time_ns()
        span = tracing.tracer().start_span(
            RUN,
            context=parent,
            start_time=start,
            attributes=self._run_attributes(response_id, 1, delivery, background),
        )
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=parent)
        ctx = span.get_span_context()
        stored = {**carrier, "trace": format(ctx.trace_id, "032x"), "run": format(ctx.span_id, "016x")}
        return RunTrace(span, start), json.dumps(stored, separators=(",", ":"))

    def next_life(
        self,
        response_id: str,
        stored_json: str | None,
        *,
        life: int,
        previous_span: str | None,
        previous_start: float,
        previous_owner: str | None,
        delivery: str,
        background: bool,
    ) -> RunTrace:
        """The run span of a recovered response's life number `life`: emits the previous life's
        run span (ended now: it was interrupted) and starts this one, linked to it."""
        if not tracing.enabled():
            return NO_TRACE
        stored: dict[str, str] = {}
        if stored_json:
            with contextlib.suppress(ValueError, TypeError):
                stored = dict(json.loads(stored_json))
        parent = _PROPAGATOR.extract(stored) if "traceparent" in stored else otel_context.Context()
        trace_id = _hex(stored.get("trace"), 32)
        links: list[Link] = []
        now = time.time_ns()
        previous_id = _hex(previous_span, 16)
        if previous_id is not None and trace_id is not None:
            with tracing.preset_ids(trace_id, previous_id) as honoured:
                if honoured:
                    dead = tracing.tracer().start_span(
                        RUN,
                        context=parent,
                        start_time=int(previous_start * 1e9),
                        attributes={
                            **self._run_attributes(response_id, life - 1, delivery, background),
                            ATTR + "replica": previous_owner or "unknown",
                            ATTR + "interrupted": True,
                        },
                    )
                    dead.set_status(
                        Status(
                            StatusCode.ERROR, f"interrupted: the replica stopped; recovered by {self.replica}"
                        )
                    )
                    dead.end(now)
            flags = TraceFlags(TraceFlags.SAMPLED)
            previous_ctx = SpanContext(trace_id, previous_id, is_remote=True, trace_flags=flags)
            links.append(Link(previous_ctx, {ATTR + "relation": "previous_life"}))
            if "traceparent" not in stored:
                parent = trace.set_span_in_context(NonRecordingSpan(previous_ctx))
        attributes = self._run_attributes(response_id, life, delivery, background)
        attributes[ATTR + "recovered"] = True
        span = tracing.tracer().start_span(
            RUN, context=parent, start_time=now, links=links, attributes=attributes
        )
        return RunTrace(span, now)


def _hex(value: str | None, width: int) -> int | None:
    if not value or len(value) != width:
        return None
    try:
        parsed = int(value, 16)
    except ValueError:
        return None
    return parsed or None


@contextlib.contextmanager
def webhook_attempt(
    stored_json: str | None, headers: dict[str, str], **attributes: Any
) -> Iterator[trace.Span | None]:
    """A span for one webhook attempt, in the trace of the response it reports (its stored
    context), its `traceparent` added to the attempt's `headers`; None when tracing is off."""
    if not tracing.enabled():
        yield None
        return
    stored: dict[str, str] = {}
    if stored_json:
        with contextlib.suppress(ValueError, TypeError):
            stored = dict(json.loads(stored_json))
    parent = _PROPAGATOR.extract(stored) if "traceparent" in stored else otel_context.Context()
    with tracing.tracer().start_as_current_span(
        WEBHOOK, context=parent, kind=trace.SpanKind.CLIENT, attributes=_attrs(attributes)
    ) as span:
        _PROPAGATOR.inject(headers)
        yield span
