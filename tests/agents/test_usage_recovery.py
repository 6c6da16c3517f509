"""A recovered response's usage counts the model calls of its first life (every write keeps the
usage so far on the response row) and those of the rerun; a foreground response that recovery
ends (it cannot be resumed) keeps the usage its dead owner committed.

Sequential writer -> reviewer on agent-framework's real chat-completions client against the
fake model; the server is killed (`kill -9`) while the reviewer streams, after the checkpoint
that paired the writer's superstep committed; a new server on the same database resumes from
that checkpoint and reruns the reviewer only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from durable_responses.testing import FakeModel
from tests.support.responses import wait_terminal
from tests.support.servers import ServerProcess
from tests.support.sse import check_sequence, iter_frames, stream_events

pytestmark = pytest.mark.crash


def _post_until_reviewer_streams(base_url: str, *, background: bool, then: Callable[[], None]) -> str:
    """POST a streaming response, read until the reviewer's first delta (the writer's
    superstep, its model call included, is committed then) and call `then` (the kill) with the
    stream still open (a foreground client that goes away first would cancel its response);
    returns the response id."""
    body = {"model": "m", "input": "hello tokens=60", "background": background, "stream": True}
    with httpx.stream("POST", f"{base_url}/v1/responses", json=body, timeout=60) as r:
        rid = ""
        for f in iter_frames(r.iter_lines()):
            data = f.json or {}
            rid = rid or data.get("response", {}).get("id", "")
            if data.get("type") == "response.output_text.delta":
                then()
                return rid
    raise AssertionError(f"the stream of {rid or 'the response'} ended before the reviewer streamed")


def test_usage_after_recovery_counts_both_lives(database_url: str, tmp_path: Path) -> None:
    with FakeModel(token_delay=0.05) as fake:
        env = {**fake.env("chat"), "DURABLE_RESPONSES_LEASE_SECONDS": "2"}
        first = ServerProcess(
            database_url=database_url, app="tests.agents.apps:sequential", workdir=tmp_path / "a", env=env
        ).start()
        try:
            rid = _post_until_reviewer_streams(first.base_url, background=True, then=first.kill)
        finally:
            first.kill()
        writer = fake.calls_since(0, agent="writer")
        assert len(writer) == 1 and writer[0].finished
        second = ServerProcess(
            database_url=database_url, app="tests.agents.apps:sequential", workdir=tmp_path / "b", env=env
        ).start()
        try:
            client = second.client()
            final = wait_terminal(client, rid, 60)
            assert final.status == "completed", final
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


def test_a_foreground_response_ended_by_recovery_keeps_its_usage(database_url: str, tmp_path: Path) -> None:
    """The dead owner committed the writer's model call (its usage is on the response row);
    recovery cannot resume a foreground response and ends it `failed`: the final response and
    its `response.failed` event carry that usage, not zero."""
    with FakeModel(token_delay=0.05) as fake:
        env = {**fake.env("chat"), "DURABLE_RESPONSES_LEASE_SECONDS": "2"}
        first = ServerProcess(
            database_url=database_url, app="tests.agents.apps:sequential", workdir=tmp_path / "a", env=env
        ).start()
        try:
            rid = _post_until_reviewer_streams(first.base_url, background=False, then=first.kill)
        finally:
            first.kill()
        writer = fake.calls_since(0, agent="writer")
        assert len(writer) == 1 and writer[0].finished and writer[0].usage is not None
        expected = writer[0].usage
        assert expected.input_tokens > 0 and expected.output_tokens > 0
        second = ServerProcess(
            database_url=database_url, app="tests.agents.apps:sequential", workdir=tmp_path / "b", env=env
        ).start()
        try:
            client = second.client()
            final = wait_terminal(client, rid, 60)
            events = stream_events(second.base_url, rid)
        finally:
            second.kill()
        assert final.status == "failed", final
        assert final.error is not None and "background" in final.error.message.lower()
        check_sequence(events, label=rid)
        assert len(fake.calls_since(0, agent="reviewer")) == 1, "a foreground response was resumed"
        terminal = events[-1]
        assert terminal["type"] == "response.failed", terminal["type"]
        for where, used in (
            ("retrieve", final.usage and final.usage.model_dump()),
            ("response.failed", terminal["response"]["usage"]),
        ):
            assert used is not None, f"{where}: no usage"
            assert used["input_tokens"] == expected.input_tokens, (where, used)
            assert used["output_tokens"] == expected.output_tokens, (where, used)
            assert used["input_tokens_details"]["cached_tokens"] == expected.cached_tokens, (where, used)
