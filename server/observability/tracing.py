"""Traces: the process's tracer provider, configured from the standard `OTEL_*` environment.

Job: `configure(settings)` installs an SDK `TracerProvider` exporting over OTLP (http/protobuf
or grpc) or to the console, before anything asks for a tracer; `enabled()` tells the hooks
whether to make spans at all. Model-call spans (`chat ...`) are recorded whatever the sampler
decides (`KeepModelCalls`): the host counts a response's token usage from them.

Invariants:
- Off (no exporter configured): no provider is installed here, `enabled()` is False and every
  hook of ours returns before touching OpenTelemetry.
- A span can be started with ids chosen in advance (`preset_ids`): a recovered response's
  host emits the run span its dead predecessor could never end, under the id that span's
  children already point at, so the trace has no orphans.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from .settings import Exporter, ObservabilitySettings, OtlpProtocol
from .settings import Sampler as SamplerName
from .spans import LeanTracer, Recorder

__all__ = [
    "EXECUTOR_STEPS",
    "CachedTracers",
    "Exporting",
    "KeepModelCalls",
    "child_span",
    "configure",
    "enabled",
    "is_model_call",
    "preset_ids",
    "shutdown",
    "tracer",
]

log = logging.getLogger("durable_responses.tracing")

TRACER_NAME = "durable_responses"
# agent-framework names a model call's span "chat <model>" (GenAI semantic conventions).
_CHAT = "chat"
# agent-framework's spans of a workflow's inner steps (`OtelAttr`'s EXECUTOR_PROCESS_SPAN,
# EDGE_GROUP_PROCESS_SPAN, MESSAGE_SEND_SPAN; a test pins them): an executor's handling of a
# message, and the message's routing, three or more per superstep. Not made unless
# `DURABLE_RESPONSES_TRACE_EXECUTORS` asks: measured in-process on a countdown, they cost
# ~130 us of the event loop's time per superstep (~370 us without tracing) before export.
# What runs inside them (agent runs, model and tool calls) nests under the workflow's span.
EXECUTOR_STEPS = ("executor.process", "edge_group.process", "message.send")

_enabled = False
_provider: TracerProvider | None = None
_tracer: trace.Tracer | None = None


class CachedTracers(TracerProvider):
    """The SDK's provider, with `get_tracer` answered from a cache. agent-framework asks for its
    tracer once per span; the SDK's `get_tracer` then builds a deprecated `InstrumentationInfo`
    and edits the process's warning filters every time (py-spy, tracing on, a countdown: 5% of
    the event loop's time in `get_tracer` alone)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._cached: dict[tuple[str, str | None, str | None], trace.Tracer] = {}

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Any = None,
    ) -> trace.Tracer:
        key = (instrumenting_module_name, instrumenting_library_version, schema_url)
        if attributes:  # attributes make another scope; rare, not cached
            return self.wrap(super().get_tracer(*key, attributes), _Scope(*key, attributes))
        found = self._cached.get(key)
        if found is None:
            found = self._cached[key] = self.wrap(super().get_tracer(*key), _Scope(*key))
        return found

    def wrap(self, tracer: trace.Tracer, scope: InstrumentationScope) -> trace.Tracer:
        """The tracer handed out for the SDK's `tracer` of `scope` (a subclass may make or
        filter its spans)."""
        return tracer


class _Scope(InstrumentationScope):
    """An instrumentation scope hashed once (the OTLP encoder groups every span by its scope,
    and the SDK hashes its name, version and attributes each time)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


class Exporting(CachedTracers):
    """The provider of a process that exports traces: its tracers make lean spans
    (`spans.LeanTracer`) but for model calls, and none named in `quiet`. `processors` export
    every span; processors added later (usage) see the SDK's spans, the model calls, only."""

    def __init__(self, processors: list[SpanProcessor], quiet: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for p in processors:
            self.add_span_processor(p)
        # sampler_for's samplers all decide a local parent's child as the parent was decided.
        self._recorder = Recorder(
            self.sampler, self.id_generator, self.resource, processors, follow_local_parent=True
        )
        self._quiet = quiet

    def wrap(self, tracer: trace.Tracer, scope: InstrumentationScope) -> trace.Tracer:
        return LeanTracer(tracer, scope, self._recorder, is_model_call, self._quiet)


def child_span(
    parent: trace.Span,
    name: str,
    attributes: dict[str, Any],
    start_time: int | None = None,
    via: trace.Tracer | None = None,
) -> trace.Span:
    """A span of ours under `parent` (attributes of the API's types, as given), made by `via`
    (default: our tracer): the lean path when that is a `LeanTracer` (`LeanTracer.child`),
    else its `start_span`."""
    t = via or tracer()
    if isinstance(t, LeanTracer):
        return t.child(parent, name, attributes, start_time)
    return t.start_span(name, trace.set_span_in_context(parent), attributes=attributes, start_time=start_time)


def enabled() -> bool:
    """Whether this process exports traces (then the hooks make spans)."""
    return _enabled


def tracer() -> trace.Tracer:
    global _tracer
    if _tracer is None:
        _tracer = trace.get_tracer(TRACER_NAME)
    return _tracer


def is_model_call(name: str) -> bool:
    return name == _CHAT or name.startswith(_CHAT + " ")


class KeepModelCalls(Sampler):
    """The configured sampler, except that a model call is always at least recorded (never
    exported because of that): usage must not depend on trace sampling."""

    def __init__(self, inner: Sampler) -> None:
        self._inner = inner

    def should_sample(
        self,
        parent_context: Any,
        trace_id: int,
        name: str,
        kind: Any = None,
        attributes: Any = None,
        links: Any = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        result = self._inner.should_sample(
            parent_context, trace_id, name, kind, attributes, links, trace_state
        )
        if result.decision is Decision.DROP and is_model_call(name):
            return SamplingResult(Decision.RECORD_ONLY, result.attributes, result.trace_state)
        return result

    def get_description(self) -> str:
        return f"KeepModelCalls{{{self._inner.get_description()}}}"


def sampler_for(settings: ObservabilitySettings) -> Sampler:
    ratio = settings.sampler_arg
    inner: Sampler = {
        SamplerName.ALWAYS_ON: ALWAYS_ON,
        SamplerName.ALWAYS_OFF: ALWAYS_OFF,
        SamplerName.TRACE_ID_RATIO: TraceIdRatioBased(ratio),
        SamplerName.PARENT_ALWAYS_ON: ParentBased(ALWAYS_ON),
        SamplerName.PARENT_ALWAYS_OFF: ParentBased(ALWAYS_OFF),
        SamplerName.PARENT_TRACE_ID_RATIO: ParentBased(TraceIdRatioBased(ratio)),
    }[settings.sampler]
    return KeepModelCalls(inner)


_PRESET: contextvars.ContextVar[tuple[int | None, int | None] | None] = contextvars.ContextVar(
    "durable_responses_preset_ids", default=None
)


class _Ids(RandomIdGenerator):
    """Random ids, unless the caller chose them (`preset_ids`)."""

    def generate_span_id(self) -> int:
        preset = _PRESET.get()
        if preset is not None and preset[1] is not None:
            return preset[1]
        return super().generate_span_id()

    def generate_trace_id(self) -> int:
        preset = _PRESET.get()
        if preset is not None and preset[0] is not None:
            return preset[0]
        return super().generate_trace_id()


@contextlib.contextmanager
def preset_ids(trace_id: int | None, span_id: int) -> Iterator[bool]:
    """Start spans inside this block with these ids (the trace id only matters for a root).

    Yields whether it can: only the provider `configure` installed honours it.
    """
    token = _PRESET.set((trace_id, span_id))
    try:
        yield _provider is not None
    finally:
        _PRESET.reset(token)


def _exporter(kind: Exporter, settings: ObservabilitySettings) -> SpanExporter:
    if kind is Exporter.CONSOLE:
        return ConsoleSpanExporter()
    endpoint = settings.signal_endpoint("traces")
    if settings.protocol is OtlpProtocol.GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=endpoint, insecure=_insecure(endpoint))
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=endpoint)


def _insecure(endpoint: str | None) -> bool | None:
    if endpoint is None:
        return None
    return endpoint.startswith("http://")


class _HashedOnce(Resource):
    """The SDK's resource, hashed once: the OTLP encoder groups every exported span by its
    resource, and the SDK's hash serializes the attributes to JSON each time (py-spy, tracing
    on, a countdown: 16% of the export thread)."""

    def __init__(self, resource: Resource) -> None:
        super().__init__(resource.attributes, resource.schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


def resource(settings: ObservabilitySettings) -> Resource:
    return _HashedOnce(Resource.create({SERVICE_NAME: settings.service_name}))


def configure(settings: ObservabilitySettings) -> bool:
    """Install the exporting tracer provider the settings ask for (once per process); returns
    whether tracing is on. Must run before anything takes a tracer (the host's usage meter)."""
    global _enabled, _provider
    exporters = settings.trace_exporters
    if _provider is not None or not exporters:
        return _enabled
    quiet: tuple[str, ...] = () if settings.trace_executors else EXECUTOR_STEPS
    provider = Exporting(
        [BatchSpanProcessor(_exporter(kind, settings)) for kind in exporters],
        quiet,
        sampler=sampler_for(settings),
        resource=resource(settings),
        id_generator=_Ids(),
    )
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        log.warning("a tracer provider was already installed: traces go where it sends them")
        return False
    _provider = provider
    _enabled = True
    atexit.register(shutdown)
    log.info(
        "tracing on: %s (%s)",
        ", ".join(e.value for e in exporters),
        settings.protocol.value if Exporter.OTLP in exporters else "-",
    )
    return True


def shutdown() -> None:
    """Export what is still buffered (on exit)."""
    if _provider is not None:
        with contextlib.suppress(Exception):
            _provider.force_flush(5000)
            _provider.shutdown()
