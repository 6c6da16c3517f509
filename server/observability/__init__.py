"""Observability: traces (OpenTelemetry), metrics (Prometheus text and OTLP) and structured logs.

Job: one place that configures the process's telemetry from `ObservabilitySettings` and gives
every layer the few hooks it calls (`tracing`, `metrics`, `logs`).

Invariant: this package imports none of the server's layers (protocol, store, runtime, http),
so each of them may import it without bending the layering; with tracing off its hooks cost a
flag test and nothing else.
"""

from __future__ import annotations

from .settings import ObservabilitySettings

__all__ = ["ObservabilitySettings"]
