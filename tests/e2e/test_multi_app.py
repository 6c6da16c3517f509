"""Several apps on one server: `--app NAME=MODULE:ATTR` repeated, the request's `model` picks.

On both databases: each app answers as itself; `/v1/models` lists both with their input schema;
an unknown model is a 400 naming the known ones; a response continued under another app's model
is a 400; the responses record their app (the operator view shows it). With kill -9 while a
background response of each app runs, the restarted server resumes each with its own app, every
output once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.inprocess import InProcessServer
from tests.support.responses import wait_terminal
from tests.support.waits import wait_until

APPS = "down=durable_responses.examples.countdown:countdown,up=tests.e2e.multi_apps:countup"


def _texts(response: Any) -> list[str]:
    return [o.content[0].text for o in response.output if o.type == "message"]


def test_the_model_picks_the_app(database_url: str) -> None:
    with InProcessServer(database_url, APPS) as srv:
        client = srv.client()
        down = client.responses.create(model="down", input="2 delay=0")
        up = client.responses.create(model="up", input="2 delay=0")
        assert _texts(down) == ["tick 2", "tick 1", "tick 0"]
        assert _texts(up) == ["up 0", "up 1", "up 2"]
        assert down.model == "down" and up.model == "up"
        listed = {m.id: m for m in client.models.list().data}
        assert set(listed) == {"down", "up"}
        assert client.models.retrieve("up").id == "up"
        with pytest.raises(openai.NotFoundError):
            client.models.retrieve("sideways")
        with pytest.raises(openai.BadRequestError) as unknown:
            client.responses.create(model="sideways", input="1")
        assert unknown.value.code == "model_not_found"
        assert "'down'" in unknown.value.message and "'up'" in unknown.value.message
        with pytest.raises(openai.BadRequestError) as mismatch:
            client.responses.create(model="up", input="1 delay=0", previous_response_id=down.id)
        assert mismatch.value.code == "model_mismatch" and "'down'" in mismatch.value.message
        again = client.responses.create(model="down", input="1 delay=0", previous_response_id=down.id)
        assert again.status == "completed"
        overview = httpx.get(f"{srv.base_url}/v1/admin/overview", timeout=10).json()
        assert overview["apps"] == ["down", "up"]
        rows = httpx.get(f"{srv.base_url}/v1/admin/responses", timeout=10).json()["data"]
        assert {r["id"]: r["app"] for r in rows}[up.id] == "up"


@pytest.mark.crash
def test_kill_9_each_app_resumes_as_itself(database_url: str, server_factory: Any, tmp_path: Path) -> None:
    srv = server_factory(database_url, APPS, workdir=tmp_path / "w").start()
    client = srv.client()
    down = client.responses.create(model="down", input="30 delay=0.05", background=True)
    up = client.responses.create(model="up", input="30 delay=0.05", background=True)
    for rid in (down.id, up.id):
        wait_until(lambda rid=rid: len(_texts(client.responses.retrieve(rid))) >= 3, 30)
    srv.kill()
    again = server_factory(database_url, APPS, workdir=tmp_path / "w").start()
    client = again.client()
    d, u = wait_terminal(client, down.id, 90), wait_terminal(client, up.id, 90)
    assert d.status == "completed" and _texts(d) == [f"tick {n}" for n in range(30, -1, -1)]
    assert u.status == "completed" and _texts(u) == [f"up {n}" for n in range(31)]
