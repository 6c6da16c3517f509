"""The observability settings: the standard `OTEL_*` variables the server itself interprets.

Job: decide once whether traces and metrics are exported, where, how sampled, and whether
agent-framework's inner workflow steps are traced (`DURABLE_RESPONSES_TRACE_EXECUTORS`). Off when
nothing is set: no exporter, no span of ours, no per-request work (Prometheus text at
`/metrics` is always served: it costs a few counter increments).

Invariant: these are the OpenTelemetry specification's names and meanings; the variables the
SDK reads by itself (`OTEL_BSP_*`, `OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT`,
`..._CERTIFICATE`, `..._COMPRESSION`, `OTEL_RESOURCE_ATTRIBUTES`) keep their standard meaning
and are not repeated here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import field_validator

from ..envsettings import EnvSection, env_field


class OtlpProtocol(StrEnum):
    HTTP = "http/protobuf"
    GRPC = "grpc"


class Sampler(StrEnum):
    ALWAYS_ON = "always_on"
    ALWAYS_OFF = "always_off"
    TRACE_ID_RATIO = "traceidratio"
    PARENT_ALWAYS_ON = "parentbased_always_on"
    PARENT_ALWAYS_OFF = "parentbased_always_off"
    PARENT_TRACE_ID_RATIO = "parentbased_traceidratio"


class Exporter(StrEnum):
    OTLP = "otlp"
    CONSOLE = "console"
    NONE = "none"


def _exporters(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(v.strip().lower() for v in value.split(",") if v.strip())
    return value


class ObservabilitySettings(EnvSection):
    SECTION: ClassVar[str] = "Observability"

    service_name: str = env_field(
        "durable-responses",
        "OTEL_SERVICE_NAME",
        "The `service.name` of every span and metric (`OTEL_RESOURCE_ATTRIBUTES` adds more).",
    )
    traces_exporter: tuple[Exporter, ...] = env_field(
        (),
        "OTEL_TRACES_EXPORTER",
        "`otlp`, `console` or `none` (comma-separated). Unset: `otlp` when an OTLP endpoint is set, "
        "else tracing is off (no span is made, nothing costs).",
    )
    metrics_exporter: tuple[Exporter, ...] = env_field(
        (),
        "OTEL_METRICS_EXPORTER",
        "`otlp` or `none`. Unset: `otlp` when an OTLP endpoint is set. `GET /metrics` (Prometheus "
        "text) is served either way.",
    )
    endpoint: str = env_field(
        "",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "The OTLP collector (`http://host:4318` for http/protobuf, `http://host:4317` for grpc); "
        "`/v1/traces` and `/v1/metrics` are appended for http/protobuf.",
    )
    traces_endpoint: str = env_field(
        "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "The traces endpoint, used as is (wins over the base one)."
    )
    metrics_endpoint: str = env_field(
        "",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "The metrics endpoint, used as is (wins over the base one).",
    )
    protocol: OtlpProtocol = env_field(
        OtlpProtocol.HTTP, "OTEL_EXPORTER_OTLP_PROTOCOL", "`http/protobuf` or `grpc`."
    )
    sampler: Sampler = env_field(
        Sampler.PARENT_ALWAYS_ON,
        "OTEL_TRACES_SAMPLER",
        "Which traces are kept (the standard samplers). Model calls are recorded whatever it says: "
        "a response's `usage` is counted from them.",
    )
    sampler_arg: float = env_field(
        1.0, "OTEL_TRACES_SAMPLER_ARG", "The ratio of the `traceidratio` samplers.", ge=0, le=1
    )
    trace_executors: bool = env_field(
        False,
        "DURABLE_RESPONSES_TRACE_EXECUTORS",
        "`true`: also trace agent-framework's inner workflow steps (its `executor.process`, "
        "`edge_group.process` and `message.send` spans: each executor's handling of a message and "
        "the message's routing, three or more per superstep). Off, they are not made; the "
        "superstep spans, the workflow's, and every agent, model call and tool call span still are.",
    )
    metric_export_interval_ms: float = env_field(
        60000.0, "OTEL_METRIC_EXPORT_INTERVAL", "Milliseconds between two OTLP metric exports.", gt=0
    )
    sdk_disabled: bool = env_field(
        False, "OTEL_SDK_DISABLED", "`true`: no traces and no OTLP metrics, whatever else is set."
    )

    _split = field_validator("traces_exporter", "metrics_exporter", mode="before")(_exporters)

    def _on(self, chosen: tuple[Exporter, ...], signal_endpoint: str) -> tuple[Exporter, ...]:
        if self.sdk_disabled:
            return ()
        if not chosen:
            return (Exporter.OTLP,) if (signal_endpoint or self.endpoint) else ()
        return tuple(e for e in chosen if e is not Exporter.NONE)

    @property
    def trace_exporters(self) -> tuple[Exporter, ...]:
        """The exporters traces go to; empty: tracing is off."""
        return self._on(self.traces_exporter, self.traces_endpoint)

    @property
    def otlp_metrics(self) -> bool:
        return Exporter.OTLP in self._on(self.metrics_exporter, self.metrics_endpoint)

    def signal_endpoint(self, signal: str) -> str | None:
        """Where `signal` (`traces`, `metrics`) goes over OTLP; None: the exporter's default."""
        specific = self.traces_endpoint if signal == "traces" else self.metrics_endpoint
        if specific:
            return specific
        if not self.endpoint:
            return None
        if self.protocol is OtlpProtocol.HTTP:
            return self.endpoint.rstrip("/") + f"/v1/{signal}"
        return self.endpoint
