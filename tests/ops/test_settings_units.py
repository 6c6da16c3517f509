"""The observability settings and the sampler, without a server: tracing is off unless the
standard variables ask for it; model calls are recorded whatever the sampler decides."""

from __future__ import annotations

from opentelemetry.sdk.trace.sampling import Decision

from durable_responses.observability.settings import Exporter, ObservabilitySettings
from durable_responses.observability.tracing import sampler_for
from durable_responses.store.ops.retention import parse_duration


def test_off_unless_configured() -> None:
    s = ObservabilitySettings.from_env({})
    assert s.trace_exporters == () and not s.otlp_metrics
    s = ObservabilitySettings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert s.trace_exporters == (Exporter.OTLP,) and s.otlp_metrics
    assert s.signal_endpoint("traces") == "http://c:4318/v1/traces"
    s = ObservabilitySettings.from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    )
    assert s.signal_endpoint("traces") == "http://c:4317"
    s = ObservabilitySettings.from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"}
    )
    assert s.trace_exporters == ()
    s = ObservabilitySettings.from_env({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"})
    assert s.trace_exporters == ()


def test_model_calls_are_recorded_whatever_the_sampler() -> None:
    off = sampler_for(ObservabilitySettings.from_env({"OTEL_TRACES_SAMPLER": "always_off"}))
    assert off.should_sample(None, 1, "chat gpt-4o").decision is Decision.RECORD_ONLY
    assert off.should_sample(None, 1, "invoke_agent writer").decision is Decision.DROP
    ratio = sampler_for(
        ObservabilitySettings.from_env(
            {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}
        )
    )
    assert ratio.should_sample(None, 12345, "chat").decision is Decision.RECORD_ONLY


def test_durations() -> None:
    assert (
        parse_duration("30d") == 30 * 86400 and parse_duration("12h") == 43200 and parse_duration("0s") == 0
    )
    for bad in ("", "30", "d", "-1d", "1y"):
        try:
            parse_duration(bad)
        except ValueError:
            continue
        raise AssertionError(bad)
