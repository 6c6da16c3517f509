"""A typed-input workflow killed mid-run (`kill -9`) and restarted on the same database (SQLite and
PostgreSQL) completes with every output exactly once (issue 36). Its checkpoints hold the
workflow's own `Tick` dataclass, admitted because the workflow declares it (no flag).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.responses import incomplete_indexes, output_texts, read_until, wait_terminal
from tests.support.sse import TERMINAL_EVENT_TYPES, check_sequence, stream_events

pytestmark = pytest.mark.crash

TICKS = "tests.apps.typed:tick_countdown"


def test_a_typed_workflow_killed_mid_run_resumes_every_output_once(
    server_factory: Any, database_url: str
) -> None:
    env = {"STEP_DELAY_SECONDS": "0.3"}
    first = server_factory(database_url, app=TICKS, env=env).start()
    stream = first.client().responses.create(model="ticks", input="6", background=True, stream=True)

    def third_tick_done(d: dict[str, Any], _seen: list[dict[str, Any]]) -> bool:
        texts = [p.get("text") for p in d.get("item", {}).get("content", []) or []]
        return d["type"] == "response.output_item.done" and '{"n": 4}' in texts

    before = read_until(stream, third_tick_done)
    first.kill()
    rid = before[0]["response"]["id"]
    assert before[-1]["type"] not in TERMINAL_EVENT_TYPES

    second = server_factory(database_url, app=TICKS, env=env).start()
    client = second.client()
    final = wait_terminal(client, rid, timeout=60)
    assert final.status == "completed", (final.status, final.error, second.log())
    assert [json.loads(t) for t in output_texts(final)] == [{"n": i} for i in range(6, -1, -1)]
    full = stream_events(second.base_url, rid)
    check_sequence(full, label=f"{rid} (replay):")
    done = [e for e in full if e["type"] == "response.output_item.done"]
    shown = [e for e in done if e["output_index"] not in incomplete_indexes(full)]
    assert len(shown) == 7, [e["item"] for e in done]
