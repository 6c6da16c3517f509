"""Metrics: Prometheus text at `GET /metrics`, mirrored to OTLP when configured.

Job: the server's metrics, defined once here; every layer records through the functions
below. `text()` renders the registry; `configure_otlp(settings)` mirrors every instrument to an
OpenTelemetry `MeterProvider` exporting over OTLP.

Invariants:
- Labels take values from small fixed sets (a status, a write kind, a route template, an error
  class), never a response, user or conversation id: cardinality stays bounded.
- Counters count what this process did since it started (Prometheus' `rate()` handles restarts).
- Values read from live objects (runs in flight, `Store.stats`) are taken at scrape time from
  the sources registered with `watch_*`, held weakly (a stopped host drops out).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

import prometheus_client
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .settings import ObservabilitySettings, OtlpProtocol

__all__ = ["CONTENT_TYPE", "REGISTRY", "configure_otlp", "text"]

log = logging.getLogger("durable_responses.metrics")

PREFIX = "durable_responses_"
REGISTRY: CollectorRegistry = prometheus_client.REGISTRY
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST
# Counters without their `_created` series (one per label set, of no use to a scraper here).
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
_BYTES = (256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)


# The OpenTelemetry twin of each instrument, by name: empty until `configure_otlp` builds them
# all, then replaced once by the full mapping.
_OTEL: dict[str, Any] = {}


class _Instrument:
    """A Prometheus instrument, and its OpenTelemetry twin (`_OTEL`) once OTLP metrics are on."""

    def __init__(self, prom: Any, labels: Sequence[str]) -> None:
        self.prom = prom
        self.labels = tuple(labels)
        # Children by label values (bounded: no label takes an unbounded set of values);
        # prometheus_client's `labels()` validates and locks on every call, several per commit.
        self._children: dict[tuple[str, ...], Any] = {}

    def _child(self, labels: dict[str, str]) -> Any:
        if not self.labels:
            return self.prom
        try:
            key = tuple(labels[name] for name in self.labels)
        except KeyError:
            return self.prom.labels(**labels)  # which says what is wrong with them
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.prom.labels(**labels)
        return child


class _Counter(_Instrument):
    def __init__(self, name: str, doc: str, labels: Sequence[str] = ()) -> None:
        super().__init__(prometheus_client.Counter(PREFIX + name, doc, labels, registry=REGISTRY), labels)
        self.name, self.doc = name, doc

    def inc(self, amount: float = 1, **labels: str) -> None:
        self._child(labels).inc(amount)
        otel = _OTEL.get(self.name)
        if otel is not None:
            otel.add(amount, labels)


class _Histogram(_Instrument):
    def __init__(self, name: str, doc: str, buckets: Sequence[float], labels: Sequence[str] = ()) -> None:
        prom = prometheus_client.Histogram(PREFIX + name, doc, labels, buckets=buckets, registry=REGISTRY)
        super().__init__(prom, labels)
        self.name, self.doc, self.buckets = name, doc, tuple(buckets)

    def observe(self, value: float, **labels: str) -> None:
        self._child(labels).observe(value)
        otel = _OTEL.get(self.name)
        if otel is not None:
            otel.record(value, labels)


_COUNTERS: list[_Counter] = []
_HISTOGRAMS: list[_Histogram] = []


def _counter(name: str, doc: str, labels: Sequence[str] = ()) -> _Counter:
    c = _Counter(name, doc, labels)
    _COUNTERS.append(c)
    return c


def _histogram(name: str, doc: str, buckets: Sequence[float], labels: Sequence[str] = ()) -> _Histogram:
    h = _Histogram(name, doc, buckets, labels)
    _HISTOGRAMS.append(h)
    return h


RESPONSES_CREATED = _counter(
    "creations", "Responses created by this replica, by mode (background, stream, json, unstored).", ["mode"]
)
APP_CREATIONS = _counter("app_creations", "Responses created by this replica, by hosted app.", ["app"])
RESPONSES_ENDED = _counter(
    "responses", "Responses whose end this replica recorded, by final status.", ["status"]
)
TIME_TO_FIRST_OUTPUT = _histogram(
    "time_to_first_output_seconds",
    "From a response's creation to its first output item, by delivery mode.",
    _SECONDS,
    ["delivery"],
)
COMMIT_SECONDS = _histogram(
    "commit_seconds", "Duration of one outbox transaction, by write kind.", _SECONDS, ["kind"]
)
COMMIT_WRITES = _histogram(
    "commit_batch_writes", "Writes (responses' units of work) per outbox transaction.", _COUNTS, ["kind"]
)
COMMIT_EVENTS = _histogram("commit_batch_events", "Events per outbox transaction.", _COUNTS, ["kind"])
RECOVERIES = _counter(
    "recoveries",
    "Responses this replica took over from a dead or departed owner, by outcome (resumed, ended).",
    ["outcome"],
)
TAKEOVERS = _counter("lease_takeovers", "Expired leases this replica claimed.")
CHECKPOINT_BYTES = _histogram("checkpoint_bytes", "Size of each workflow checkpoint committed.", _BYTES)
WEBHOOKS = _counter(
    "webhook_deliveries", "Webhook delivery attempts, by outcome (delivered, retried, failed).", ["outcome"]
)
DATABASE_ERRORS = _counter(
    "database_errors", "Database operations that failed because the database was unavailable.", ["reason"]
)
HTTP_REQUESTS = _counter(
    "http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
)
HTTP_SECONDS = _histogram(
    "http_request_seconds",
    "Time to the response's first byte (SSE: its headers), by method and route template.",
    _SECONDS,
    ["method", "route"],
)
DOUBLE_TEXTING = _counter(
    "double_texting",
    "New turns that found the turn they follow still running, by the strategy applied.",
    ["strategy"],
)
WEBSOCKET_CONNECTIONS = _counter(
    "websocket_connections", "WebSocket mode upgrades, by outcome (accepted, denied).", ["outcome"]
)
WEBSOCKET_MESSAGES = _counter(
    "websocket_messages",
    "WebSocket mode client messages, by what each got: a turn (created) or its error's status.",
    ["outcome"],
)
JOURNAL_CALLS = _counter(
    "journal_calls",
    "Model and tool calls of the journal, by outcome: recorded, replayed from the journal instead "
    "of called again, re-run (a tool a crash interrupted, run again under its idempotency key).",
    ["outcome"],
)
JOURNAL_BYTES = _histogram("journal_record_bytes", "Size of each journal record written.", _BYTES)
PURGED = _counter("retention_purged_responses", "Responses deleted by retention (sweeper and purge).")


# -- values read at scrape time ----------------------------------------------------------------


class _Runs(Protocol):
    def __len__(self) -> int: ...


class _StatsSource(Protocol):
    @property
    def stats(self) -> Any: ...


_RUNS: weakref.WeakSet[Any] = weakref.WeakSet()
# Watched stores and the last stats seen of each; the counters of a store that is gone stay in
# `_RETIRED`, so that a counter summed over the process's stores never goes down (the process's
# first store closed while a second one serves: an embedder's restart, the tests' servers).
_STORES: dict[weakref.ref[Any], Any] = {}
_RETIRED: dict[str, Any] = {"commits": {}, "writes": {}, "fallbacks": {}, "failed": 0.0, "events": 0.0}


# Responses waiting for a replica of their app version, by (app, version), as this replica's
# recovery last counted them (`waiting_for_version`).
_WAITING: dict[tuple[str, str], int] = {}


def waiting_counts() -> dict[tuple[str, str], int]:
    return dict(_WAITING)


def waiting_for_version(counts: dict[tuple[str, str], int]) -> None:
    _WAITING.clear()
    _WAITING.update(counts)


def watch_runs(registry: _Runs) -> None:
    """Count `registry`'s runs in `durable_responses_runs_in_flight` while it lives."""
    _RUNS.add(registry)


def watch_store(store: _StatsSource) -> None:
    """Export `store.stats` (commits, writes and fallbacks per kind); once the store is gone,
    its counters as last seen stay in the totals."""
    # A copy of the keys: a collected store's weakref callback (`_retire`) removes its entry,
    # and a garbage collection may run while this loop allocates.
    if any(ref() is store for ref in list(_STORES)):
        return
    _STORES[weakref.ref(store, _retire)] = store.stats


def _retire(ref: weakref.ref[Any]) -> None:
    last = _STORES.pop(ref, None)
    if last is not None:
        _add(_RETIRED, last)


def _add(into: dict[str, Any], s: Any) -> None:
    for k, n in s.commits_by_kind.items():
        into["commits"][k] = into["commits"].get(k, 0) + n
    for k, n in s.writes_by_kind.items():
        into["writes"][k] = into["writes"].get(k, 0) + n
    for key, n in s.fallbacks.items():
        into["fallbacks"][key] = into["fallbacks"].get(key, 0) + n
    into["failed"] += s.failed_writes
    into["events"] += getattr(s, "events", 0)


def _store_samples() -> Iterator[tuple[str, str, dict[str, str], float]]:
    """(name, doc, labels, value) of every store counter, summed over the watched stores."""
    total: dict[str, Any] = {
        "commits": dict(_RETIRED["commits"]),
        "writes": dict(_RETIRED["writes"]),
        "fallbacks": dict(_RETIRED["fallbacks"]),
        "failed": _RETIRED["failed"],
        "events": _RETIRED["events"],
    }
    for ref in list(_STORES):
        store = ref()
        if store is None:
            continue
        _STORES[ref] = snapshot = store.stats
        _add(total, snapshot)
    commits: dict[str, float] = total["commits"]
    writes: dict[str, float] = total["writes"]
    fallbacks: dict[tuple[str, str], float] = total["fallbacks"]
    failed, events = float(total["failed"]), float(total["events"])
    for k, n in commits.items():
        yield "store_commits", "Outbox transactions committed, by write kind.", {"kind": k}, n
    for k, n in writes.items():
        yield "store_writes", "Writes committed, by write kind.", {"kind": k}, n
    for (k, cause), n in fallbacks.items():
        yield (
            "store_fallbacks",
            "Writes retried one by one after their batch failed, by write kind and cause.",
            {"kind": k, "cause": cause},
            n,
        )
    yield "store_failed_writes", "Writes the outbox could not commit.", {}, failed
    yield "events_committed", "Response events committed to the outbox.", {}, events


class _Live(Collector):
    def collect(self) -> Iterable[Metric]:
        runs = GaugeMetricFamily(PREFIX + "runs_in_flight", "Runs this replica is driving now.")
        runs.add_metric([], float(sum(len(r) for r in list(_RUNS))))
        yield runs
        waiting = GaugeMetricFamily(
            PREFIX + "responses_waiting_for_version",
            "Active responses no replica like this one can run: waiting for one of their app version.",
            labels=["app", "version"],
        )
        for (app, version), n in sorted(_WAITING.items()):
            waiting.add_metric([app, version], float(n))
        yield waiting
        families: dict[str, CounterMetricFamily] = {}
        for name, doc, labels, value in _store_samples():
            fam = families.get(name)
            if fam is None:
                fam = families[name] = CounterMetricFamily(PREFIX + name, doc, labels=sorted(labels))
            fam.add_metric([labels[k] for k in sorted(labels)], value)
        yield from families.values()


REGISTRY.register(_Live())


def text() -> bytes:
    """The Prometheus text exposition of every metric (what `GET /metrics` answers)."""
    return prometheus_client.generate_latest(REGISTRY)


# -- recording hooks -----------------------------------------------------------------------------


def commit(kind: str, seconds: float, writes: int, events: int) -> None:
    COMMIT_SECONDS.observe(seconds, kind=kind)
    COMMIT_WRITES.observe(writes, kind=kind)
    COMMIT_EVENTS.observe(events, kind=kind)


def database_error(reason: str) -> None:
    DATABASE_ERRORS.inc(reason=reason)


# -- OTLP ------------------------------------------------------------------------------------------

_meter_provider: Any = None


def configure_otlp(settings: ObservabilitySettings) -> bool:
    """Mirror every instrument to OTLP when the settings export metrics (once per process)."""
    global _meter_provider, _OTEL
    if _meter_provider is not None or not settings.otlp_metrics:
        return _meter_provider is not None
    from opentelemetry.metrics import CallbackOptions, Observation
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    from .tracing import resource

    endpoint = settings.signal_endpoint("metrics")
    if settings.protocol is OtlpProtocol.GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as Grpc

        exporter: Any = Grpc(endpoint=endpoint, insecure=endpoint.startswith("http://") if endpoint else None)
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as Http

        exporter = Http(endpoint=endpoint)
    reader = PeriodicExportingMetricReader(
        exporter, export_interval_millis=settings.metric_export_interval_ms
    )
    provider = MeterProvider(metric_readers=[reader], resource=resource(settings))
    meter = provider.get_meter("durable_responses")
    _OTEL = {
        **{c.name: meter.create_counter(PREFIX + c.name, description=c.doc) for c in _COUNTERS},
        **{
            h.name: meter.create_histogram(
                PREFIX + h.name, description=h.doc, explicit_bucket_boundaries_advisory=list(h.buckets)
            )
            for h in _HISTOGRAMS
        },
    }

    def runs(_options: CallbackOptions) -> Iterable[Observation]:
        yield Observation(float(sum(len(r) for r in list(_RUNS))))

    meter.create_observable_gauge(
        PREFIX + "runs_in_flight", [runs], description="Runs this replica drives now."
    )
    names = {
        "store_commits": "Outbox transactions committed, by write kind.",
        "store_writes": "Writes committed, by write kind.",
        "store_fallbacks": "Writes retried one by one after their batch failed.",
        "store_failed_writes": "Writes the outbox could not commit.",
        "events_committed": "Response events committed to the outbox.",
    }

    def store_callback(name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            for n, _doc, labels, value in _store_samples():
                if n == name:
                    yield Observation(value, labels)

        return observe

    for name, doc in names.items():
        meter.create_observable_counter(PREFIX + name, [store_callback(name)], description=doc)
    _meter_provider = provider
    import atexit

    atexit.register(_shutdown_meters)
    return True


def _shutdown_meters() -> None:
    if _meter_provider is not None:
        try:
            _meter_provider.shutdown(timeout_millis=5000)
        except Exception:  # exporting at exit is best effort
            log.debug("metric export at exit failed", exc_info=True)
