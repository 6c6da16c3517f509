"""Lean spans: recorded spans made without the SDK's per-span machinery, exported by the SDK.

Job: `LeanTracer` is the tracer the exporting provider hands out. It makes every span but a
model call as a `LeanSpan`, a small object that records name, ids, attributes, events, links
and status, and at its end becomes the SDK's `ReadableSpan`, handed to the exporting span
processors (which batch and export it as ever: `OTEL_BSP_*`, OTLP over http/protobuf or grpc).
A model call stays an SDK span: the usage processor counts a response's tokens from it. Spans
named in `quiet` (agent-framework's inner workflow steps, see `tracing.EXECUTOR_STEPS`) are not made
at all: the caller gets a non-recording span carrying its parent's context, so whatever starts
inside nests under the parent and nothing is orphaned.

Why: the SDK's `start_span` and `end` cost ~37 us per span in the event loop (sampler, enum
flags, bounded attributes copied and checked twice, locks, its own metrics hooks); a lean span
~13 us. With the SDK's spans, five per countdown superstep, tracing on cost +58% per superstep
(bench/README.md). This tracer asks the same sampler and id generator, so sampling and preset
ids behave as before.

Invariants:
- A span is handed to the processors once, at its first `end`; later calls change nothing.
- Ids come from the provider's id generator, the decision from its sampler (a dropped span is
  the API's non-recording span with the new context, exactly as the SDK makes it).
- Attribute values are the API's types (str, bool, int, float, sequences of one of them);
  anything else is dropped, as the SDK drops it; the SDK's count and length limits apply.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from enum import Enum
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from opentelemetry.util.types import Attributes, AttributeValue

from .recording import Recorder

__all__ = ["LeanSpan", "LeanTracer", "Recorder"]

_UNSET = Status(StatusCode.UNSET)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_NOT_SAMPLED = TraceFlags(TraceFlags.DEFAULT)


class LeanSpan(trace.Span):
    """A recording span (see the module docstring)."""

    __slots__ = (
        "_attributes",
        "_context",
        "_end",
        "_events",
        "_kind",
        "_links",
        "_name",
        "_parent",
        "_recorder",
        "_scope",
        "_start",
        "_status",
    )

    def __init__(
        self,
        recorder: Recorder,
        scope: InstrumentationScope,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: dict[str, Any],
        links: tuple[Link, ...],
        start: int,
    ) -> None:
        self._recorder = recorder
        self._scope = scope
        self._name = name
        self._context = context
        self._parent = parent
        self._kind = kind
        self._attributes = attributes
        self._links = links
        self._events: list[Event] = []
        self._status = _UNSET
        self._start = start
        self._end: int | None = None

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return self._end is None

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        if self._end is None:
            self._recorder.clean(attributes, self._attributes)

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        if self._end is None:
            self._recorder.clean({key: value}, self._attributes)

    def add_event(self, name: str, attributes: Attributes = None, timestamp: int | None = None) -> None:
        limit = self._recorder.max_events
        if self._end is None and (limit is None or len(self._events) < limit):
            self._events.append(Event(name, self._recorder.clean(attributes), timestamp or time.time_ns()))

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        limit = self._recorder.max_links
        if self._end is None and context.is_valid and (limit is None or len(self._links) < limit):
            self._links = (*self._links, Link(context, self._recorder.clean(attributes)))

    def update_name(self, name: str) -> None:
        if self._end is None:
            self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        # The SDK's rules: OK is final, UNSET changes nothing.
        if self._end is not None or self._status.status_code is StatusCode.OK:
            return
        if isinstance(status, StatusCode):
            status = Status(status, description)
        if status.status_code is not StatusCode.UNSET:
            self._status = status

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        kind = type(exception)
        module = kind.__module__
        values: dict[str, Any] = {
            "exception.type": kind.__qualname__
            if module in ("builtins", "")
            else f"{module}.{kind.__qualname__}",
            "exception.message": str(exception),
            "exception.stacktrace": "".join(traceback.format_exception(exception)),
            "exception.escaped": str(escaped),
        }
        if attributes:
            values.update(attributes)
        self.add_event("exception", values, timestamp)

    def end(self, end_time: int | None = None) -> None:
        if self._end is not None:
            return
        self._end = end_time or time.time_ns()
        r = self._recorder
        done = ReadableSpan(
            name=self._name,
            context=self._context,
            parent=self._parent,
            resource=r.resource,
            attributes=self._attributes,
            events=tuple(self._events),
            links=self._links,
            kind=self._kind,
            status=self._status,
            start_time=self._start,
            end_time=self._end,
            instrumentation_scope=self._scope,
        )
        for processor in r.processors:
            processor.on_end(done)


class _Kind(Enum):
    LEAN = 1
    SDK = 2  # a model call: the SDK makes it (the usage processor reads it)
    QUIET = 3  # not made: the caller gets its parent's context


class _Quiet:
    """`start_as_current_span` of a quiet name: the parent's context, nothing attached."""

    __slots__ = ("_span",)

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def __enter__(self) -> trace.Span:
        return self._span

    def __exit__(self, *exc: object) -> None:
        return None


# Names seen per tracer; agent-framework's carry an executor or type name, a bounded set.
_MAX_NAMES = 4096


class LeanTracer(trace.Tracer):
    """The tracer of one instrumentation scope (see the module docstring)."""

    def __init__(
        self,
        sdk: trace.Tracer,
        scope: InstrumentationScope,
        recorder: Recorder,
        sdk_names: Callable[[str], bool],
        quiet: tuple[str, ...] = (),
    ) -> None:
        self._sdk = sdk
        self._scope = scope
        self._recorder = recorder
        self._sdk_names = sdk_names  # the SDK makes these spans (model calls)
        self._quiet = quiet
        self._kinds: dict[str, _Kind] = {}

    def _kind(self, name: str) -> _Kind:
        kind = self._kinds.get(name)
        if kind is None:
            if self._sdk_names(name):
                kind = _Kind.SDK
            elif any(name == q or name.startswith(q + " ") for q in self._quiet):
                kind = _Kind.QUIET
            else:
                kind = _Kind.LEAN
            if len(self._kinds) < _MAX_NAMES:
                self._kinds[name] = kind
        return kind

    def start_span(
        self,
        name: str,
        context: otel_context.Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> trace.Span:
        made = self._kind(name)
        if made is _Kind.SDK:
            return self._sdk.start_span(
                name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
            )
        current = trace.get_current_span(context).get_span_context()
        if made is _Kind.QUIET:
            return trace.NonRecordingSpan(current)
        r = self._recorder
        links = tuple(links) if links else ()
        extra: Attributes = None
        trace_state: TraceState | None
        parent = current if current.is_valid else None
        trace_id = current.trace_id if parent is not None else r.ids.generate_trace_id()
        if parent is not None and not parent.is_remote and r.follow_local_parent:
            sampled, trace_state = parent.trace_flags.sampled, parent.trace_state
        else:
            decision = r.sampler.should_sample(context, trace_id, name, kind, attributes, links)
            sampled = decision.decision is Decision.RECORD_AND_SAMPLE
            trace_state, extra = decision.trace_state, decision.attributes
        if not sampled:
            return trace.NonRecordingSpan(
                SpanContext(
                    trace_id,
                    r.ids.generate_span_id(),
                    is_remote=False,
                    trace_flags=_NOT_SAMPLED,
                    trace_state=trace_state,
                )
            )
        values = r.clean(attributes)
        if extra:
            r.clean(extra, values)
        if links and r.max_links is not None:
            links = links[: r.max_links]
        return self._recorded(name, trace_id, trace_state, parent, kind, values, links, start_time)

    def _recorded(
        self,
        name: str,
        trace_id: int,
        trace_state: TraceState | None,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: dict[str, Any],
        links: tuple[Link, ...],
        start_time: int | None,
    ) -> LeanSpan:
        """A sampled span with a new id (what `start_span` and `child` make once decided)."""
        r = self._recorder
        context = SpanContext(
            trace_id, r.ids.generate_span_id(), is_remote=False, trace_flags=_SAMPLED, trace_state=trace_state
        )
        return LeanSpan(
            r, self._scope, name, context, parent, kind, attributes, links, start_time or time.time_ns()
        )

    def child(
        self, parent: trace.Span, name: str, attributes: dict[str, Any], start_time: int | None = None
    ) -> trace.Span:
        """A span of this scope under `parent`, its `attributes` taken as they are (the caller
        vouches for their types): the host's own spans, several per superstep, skip the
        context lookups and the attribute checks of `start_span`."""
        ctx = parent.get_span_context()
        if not (
            ctx.is_valid
            and ctx.trace_flags.sampled
            and not ctx.is_remote
            and self._recorder.follow_local_parent
        ):
            return self.start_span(
                name, trace.set_span_in_context(parent), attributes=attributes, start_time=start_time
            )
        return self._recorded(
            name, ctx.trace_id, ctx.trace_state, ctx, SpanKind.INTERNAL, attributes, (), start_time
        )

    def start_as_current_span(  # type: ignore[override]
        self,
        name: str,
        context: otel_context.Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> AbstractContextManager[trace.Span]:
        # A context manager only: OpenTelemetry's also decorates functions; nobody here does.
        made = self._kind(name)
        if made is _Kind.SDK:
            return self._sdk.start_as_current_span(
                name,
                context,
                kind,
                attributes,
                links,
                start_time,
                record_exception,
                set_status_on_exception,
                end_on_exit,
            )
        if made is _Kind.QUIET:
            return _Quiet(trace.NonRecordingSpan(trace.get_current_span(context).get_span_context()))
        span = self.start_span(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
        )
        return trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        )
