"""The operator view in headless Chromium (Debian's, driven by playwright-core): the page lists a
response awaiting a tool approval, approves it from its form, and follows the continuation's
timeline live (events appear while it runs) until it completes with the tool's result.
Screenshots of both pages are saved by every run (to the test's temporary directory, or where
DURABLE_RESPONSES_SCREENSHOTS says: `docs/screenshots/` refreshes the README's)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from durable_responses.testing import FakeModel
from tests.support.inprocess import InProcessServer
from tests.support.tools import need
from tests.surface import node


@pytest.fixture(autouse=True)
def _chromium() -> None:
    need("chromium", "apt-get install chromium")


# The README links docs/screenshots/; a run writes there only when asked
# (DURABLE_RESPONSES_SCREENSHOTS=docs/screenshots), so `make test` leaves the tree clean.


def test_the_page_answers_an_approval_and_follows_the_run_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    chosen = os.environ.get("DURABLE_RESPONSES_SCREENSHOTS")
    shots = Path(chosen).resolve() if chosen else tmp_path / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    with FakeModel() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        with InProcessServer(database_url, "tests.agents.apps:approval_agent") as srv:
            for i in range(2):  # a few finished ones for the list
                httpx.post(
                    f"{srv.base_url}/v1/responses", json={"model": "m", "input": f"hello {i}"}, timeout=30
                )
            paused = httpx.post(
                f"{srv.base_url}/v1/responses",
                json={"model": "m", "input": "refund_payment order_id=A1 amount=5"},
                timeout=30,
            ).json()
            assert any(o["type"] == "mcp_approval_request" for o in paused["output"]), paused
            fake.token_delay = 0.25  # the continuation's reply streams for a few seconds
            out = node.run(
                "ui.mjs", {"SERVER": srv.base_url, "RID": paused["id"], "SHOTS": str(shots)}, timeout=120
            )
            result = json.loads(out.strip().splitlines()[-1])
            assert "error" not in result, result
            final = httpx.get(f"{srv.base_url}/v1/responses/{result['next']}", timeout=10).json()
    assert result["listed"] >= 3
    assert "refund_payment" in result["awaiting"]
    running = [s["events"] for s in result["samples"] if s["status"] == "in_progress"]
    assert len(set(running)) >= 2 and running == sorted(running), result["samples"]  # it grew, live
    assert result["samples"][-1]["status"] == "completed"
    assert "refunded 5.00 for order A1" in result["final"]
    assert final["status"] == "completed" and final["previous_response_id"] == paused["id"]
    assert not [c for c in result["console"] if "pageerror" in c], result["console"]
    for name in ("ui-list.png", "ui-response.png"):
        assert (shots / name).stat().st_size > 10_000
