"""`GET /metrics`: Prometheus text that `prometheus_client`'s parser reads, whose counters match
what the test did, with labels from bounded sets only (never an id)."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.inprocess import InProcessServer
from tests.support.responses import wait_status
from tests.support.sse import iter_frames

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _scrape(base: str) -> Samples:
    r = httpx.get(f"{base}/metrics", timeout=10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_metrics_count_what_the_test_did(database_url: str) -> None:
    with InProcessServer(database_url) as srv:
        base = srv.base_url
        before = _scrape(base)
        ids = []
        for body in (
            {"model": "m", "input": "one"},
            {"model": "m", "input": "two"},
            {"model": "m", "input": "three", "background": True},
        ):
            r = httpx.post(f"{base}/v1/responses", json=body, timeout=30)
            assert r.status_code == 200
            ids.append(r.json()["id"])
        with httpx.stream(
            "POST", f"{base}/v1/responses", json={"model": "m", "input": "four", "stream": True}
        ) as s:
            frames = list(iter_frames(s.iter_lines()))
        assert frames[-1].event == "response.completed", frames[-1]
        ids.append(frames[0].json["response"]["id"])
        for rid in ids:  # the background one ends on its own
            assert wait_status(base, rid)["status"] == "completed"
        assert httpx.get(f"{base}/v1/responses/resp_missing").status_code == 404
        events = sum(
            len(httpx.get(f"{base}/v1/admin/responses/{rid}/events", params={"limit": 5000}).json()["data"])
            for rid in ids
        )
        after = _scrape(base)

    d = lambda name, **labels: _delta(before, after, name, **labels)  # noqa: E731
    assert d("durable_responses_creations_total", mode="json") == 2
    assert d("durable_responses_creations_total", mode="background") == 1
    assert d("durable_responses_creations_total", mode="stream") == 1
    assert d("durable_responses_responses_total", status="completed") == 4
    assert d("durable_responses_http_requests_total", method="POST", route="/v1/responses", status="200") == 4
    assert (
        d("durable_responses_http_requests_total", method="GET", route="/v1/responses/{id}", status="404")
        == 1
    )
    # The two JSON POSTs are delivered durable (nobody reads them live), the others live.
    assert d("durable_responses_time_to_first_output_seconds_count", delivery="live") == 2
    assert d("durable_responses_time_to_first_output_seconds_count", delivery="durable") == 2
    # Every event of the four responses was committed once.
    assert d("durable_responses_events_committed_total") == events
    assert d("durable_responses_store_commits_total", kind="create") >= 1
    assert d("durable_responses_commit_seconds_count", kind="create") == d(
        "durable_responses_store_commits_total", kind="create"
    )
    assert after[("durable_responses_runs_in_flight", ())] == 0
    # Bounded cardinality: no label value is an id.
    for _name, labels in after:
        for _key, value in labels:
            assert not value.startswith(("resp_", "conv_", "msg_")), (_name, labels)


def test_store_counters_never_go_down_when_a_store_is_gone() -> None:
    """Counters are summed over the process's stores; one that closes keeps its counts (CI saw
    `events_committed` drop by the events of a test server collected between two scrapes)."""
    import gc
    from types import SimpleNamespace

    from durable_responses.observability import metrics

    def events() -> float:
        return _parse(metrics.text().decode())[("durable_responses_events_committed_total", ())]

    class FakeStore:
        def __init__(self, n: int) -> None:
            self.n = n

        @property
        def stats(self) -> SimpleNamespace:
            return SimpleNamespace(
                commits_by_kind={}, writes_by_kind={}, fallbacks={}, failed_writes=0, events=self.n
            )

    store = FakeStore(1000)
    metrics.watch_store(store)
    metrics.watch_store(store)  # watched once however often it is asked
    before = events()
    del store
    gc.collect()
    assert events() == before


def _parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out
