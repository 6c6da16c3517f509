"""The operator view in headless Chromium (Debian's, driven by playwright-core): the page lists a
response awaiting a tool approval, approves it from its form, and follows the continuation's
timeline live (events appear while it runs) until it completes with the tool's result.
Screenshots of both pages go to docs/screenshots/ (linked from the README)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from server.testing import FakeModel
from tests.support.inprocess import InProcessServer
from tests.surface import node

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_the_page_answers_an_approval_and_follows_the_run_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with FakeModel() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        with InProcessServer(f"sqlite:///{tmp_path / 'ui.db'}", "tests.agents.apps:approval_agent") as srv:
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
                "ui.mjs", {"SERVER": srv.base_url, "RID": paused["id"], "SHOTS": str(SHOTS)}, timeout=120
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
        assert (SHOTS / name).stat().st_size > 10_000
