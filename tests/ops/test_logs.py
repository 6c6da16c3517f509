"""`DURABLE_RESPONSES_LOG_FORMAT=json`: one JSON object per line, with the response and the trace
each line belongs to; and no request body, input text or secret in the logs of a run whose
input and headers carry secret-looking strings."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import httpx

from durable_responses.testing import FakeModel

from .conftest import start
from .otlp import HttpReceiver

SECRET = "sk-live-" + secrets.token_hex(16)
PASSWORD = "hunter2-" + secrets.token_hex(4)
KEYS = {"time", "level", "logger", "message", "response_id", "trace_id", "span_id"}


def test_json_lines_name_the_response_and_trace_and_leak_nothing(
    tmp_path: Path,
    servers: list,  # type: ignore[type-arg]
    database_url: str,
) -> None:
    url = database_url
    trace_id = secrets.token_hex(16)
    with FakeModel() as fake, HttpReceiver() as otlp:
        env = {
            **fake.env(),
            "DURABLE_RESPONSES_LOG_FORMAT": "json",
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
            "OTEL_METRICS_EXPORTER": "none",
        }
        srv = start(servers, url, "tests.agents.apps:tool_agent", tmp_path, env=env, log_level="info")
        headers = {
            "traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01",
            "authorization": f"Bearer {SECRET}",
        }
        # A model error ends the run `failed`: the run logs a warning, inside its span.
        r = httpx.post(
            f"{srv.base_url}/v1/responses",
            json={
                "model": "m",
                "input": f"my key is {SECRET} password={PASSWORD} model_error:rate_limit_exceeded",
            },
            headers=headers,
            timeout=30,
        )
        assert r.status_code == 200 and r.json()["status"] == "failed"
        rid = r.json()["id"]
        ok = httpx.post(
            f"{srv.base_url}/v1/responses",
            json={"model": "m", "input": f"lookup_order order_id=A1 {SECRET}"},
            headers=headers,
            timeout=30,
        )
        assert ok.json()["status"] == "completed"
        bad = httpx.post(
            f"{srv.base_url}/v1/responses",
            json={"model": "m", "input": SECRET, "bogus": PASSWORD},
            timeout=30,
        )
        assert bad.status_code == 400
        srv.terminate()
    text = srv.log_path.read_text()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    records = []
    for line in lines:
        record = json.loads(line)  # every line is one JSON object
        assert KEYS <= set(record), record
        records.append(record)
    assert SECRET not in text and PASSWORD not in text
    assert "my key is" not in text and "lookup_order order_id" not in text  # no input text
    failed = [r for r in records if r["logger"] == "durable_responses.run" and r["level"] == "warning"]
    assert failed and failed[0]["response_id"] == rid and failed[0]["trace_id"] == trace_id, failed
    assert failed[0]["span_id"] and len(failed[0]["span_id"]) == 16
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert access, "uvicorn's own lines are JSON too"


def test_redaction_is_a_second_wall() -> None:
    """Whatever a library might log, secret-looking strings are masked on the way out."""
    import logging

    from durable_responses.observability.logs import JsonFormatter, Redact

    record = logging.LogRecord(
        "x", logging.WARNING, __file__, 1, "key %s url %s", (SECRET, "postgresql://u:pw@db/x"), None
    )
    Redact().filter(record)
    out = json.loads(JsonFormatter().format(record))
    assert SECRET not in out["message"] and "pw@" not in out["message"] and "sk-***" in out["message"]
