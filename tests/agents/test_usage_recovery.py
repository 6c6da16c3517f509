"""A recovered response's usage counts the model calls of its first life (every write keeps the
usage so far on the response row) and those of the rerun.

Sequential writer -> reviewer on agent-framework's real chat-completions client against the
fake model; the server is killed (`kill -9`) while the reviewer streams, after the checkpoint
that paired the writer's superstep committed; a new server on the same database resumes from
that checkpoint and reruns the reviewer only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_responses.testing import FakeModel
from tests.support.servers import ServerProcess
from tests.support.sse import check_sequence, iter_frames, stream_events

pytestmark = pytest.mark.crash


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_usage_after_recovery_counts_both_lives(database_url: str, tmp_path: Path) -> None:
    with FakeModel(token_delay=0.05) as fake:
        env = {**fake.env("chat"), "DURABLE_RESPONSES_LEASE_SECONDS": "2"}
        first = ServerProcess(
            database_url=database_url, app="tests.agents.apps:sequential", workdir=tmp_path / "a", env=env
        ).start()
        try:
            body = {"model": "m", "input": "hello tokens=60", "background": True, "stream": True}
            with httpx.stream("POST", f"{first.base_url}/v1/responses", json=body, timeout=60) as r:
                rid = ""
                for f in iter_frames(r.iter_lines()):
                    data = f.json or {}
                    rid = rid or data.get("response", {}).get("id", "")
                    if data.get("type") == "response.output_text.delta":
                        break  # the reviewer streams: the writer's superstep is checkpointed
            first.kill()
        finally:
            first.kill()
        writer = fake.calls_since(0, agent="writer")
        assert len(writer) == 1 and writer[0].finished
        second = ServerProcess(
            database_url=database_url, app="tests.agents.apps:sequential", workdir=tmp_path / "b", env=env
        ).start()
        try:
            client = second.client()
            _wait_for(
                lambda: client.responses.retrieve(rid).status == "completed", 60, "the recovered response"
            )
            final = client.responses.retrieve(rid)
            check_sequence(stream_events(second.base_url, rid), label=rid)
        finally:
            second.kill()
        reviewer = fake.calls_since(0, agent="reviewer")
        assert len(reviewer) == 2, [c.finished for c in reviewer]  # killed once, rerun once
        assert len(fake.calls_since(0, agent="writer")) == 1, "the writer must not rerun"
        expected = writer[0].usage + reviewer[1].usage  # type: ignore[operator]
        assert final.usage is not None
        assert final.usage.input_tokens == expected.input_tokens
        assert final.usage.output_tokens == expected.output_tokens
        assert final.usage.input_tokens_details.cached_tokens == expected.cached_tokens
