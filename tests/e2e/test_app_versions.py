"""App versions: a response belongs to the version of the app that made it.

On both databases: a workflow paused under one version, the server restarted with a changed
graph: the answer is a 409 `app_version_mismatch` that names both versions and the change, and
nothing is consumed; restarted with the old version, the same answer completes. Responses of a
version no running replica runs wait (counted in /metrics and the operator view) and an operator
can end them. On PostgreSQL with replicas: a v2 replica never takes over v1 work, a v1 replica
does; declared compatible, v2 does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.responses import wait_terminal
from tests.support.waits import wait_until

APPROVAL = "tests.e2e.versioned_apps:approval"
COUNTDOWN = "durable_responses.examples.countdown:countdown"


def _texts(response: Any) -> list[str]:
    return [o.content[0].text for o in response.output if o.type == "message"]


def _metric(srv: Any, name: str) -> str:
    lines = httpx.get(f"{srv.base_url}/metrics", timeout=10).text.splitlines()
    return "\n".join(line for line in lines if line.startswith(name))


@pytest.mark.crash
def test_a_pause_answered_by_a_changed_graph_is_refused_then_the_old_version_completes(
    database_url: str, server_factory: Any, tmp_path: Path
) -> None:
    work = tmp_path / "w"
    v1 = server_factory(database_url, APPROVAL, workdir=work).start()
    client = v1.client()
    paused = client.responses.create(model="any", input="ship order 9")
    (call,) = [i for i in paused.output if i.type == "function_call"]
    v1.kill()

    answer = [{"type": "function_call_output", "call_id": call.call_id, "output": "approve"}]
    v2 = server_factory(database_url, APPROVAL, workdir=work, env={"APPROVAL_VARIANT": "renamed"}).start()
    client = v2.client()
    with pytest.raises(openai.ConflictError) as refused:
        client.responses.create(model="any", previous_response_id=paused.id, input=answer)
    err = refused.value
    assert err.code == "app_version_mismatch", err.message
    versions = re.findall(r"fp-[0-9a-f]{12}", err.message)
    assert len(set(versions)) == 2, err.message
    assert "approval" in err.message and "approve_step" in err.message, err.message
    v2.kill()

    v1 = server_factory(database_url, APPROVAL, workdir=work).start()
    done = v1.client().responses.create(model="any", previous_response_id=paused.id, input=answer)
    assert done.status == "completed" and done.output_text == "Completed with decision: approve"


@pytest.mark.crash
def test_waiting_responses_of_another_version_are_shown_and_can_be_retired(
    database_url: str, server_factory: Any, tmp_path: Path
) -> None:
    work = tmp_path / "w"
    v1 = server_factory(database_url, COUNTDOWN, workdir=work, env={"DURABLE_RESPONSES_APP_VERSION": "v1"})
    client = v1.start().client()
    rids = [client.responses.create(model="any", input="40 delay=0.1", background=True).id for _ in range(2)]
    wait_until(lambda: all(_texts(client.responses.retrieve(r)) for r in rids), 30)
    v1.kill()
    env2 = {
        "DURABLE_RESPONSES_APP_VERSION": "v2",
        "DURABLE_RESPONSES_LEASE_SECONDS": "2",
        "DURABLE_RESPONSES_ADMIN_KEY": "ops-key",
    }
    ops = {"authorization": "Bearer ops-key"}
    v2 = server_factory(database_url, COUNTDOWN, workdir=work, env=env2).start()
    client = v2.client()
    wait_until(
        lambda: 'version="v1"} 2.0' in _metric(v2, "durable_responses_responses_waiting_for_version"), 40
    )
    overview = httpx.get(f"{v2.base_url}/v1/admin/overview", headers=ops, timeout=10).json()
    assert overview["versions"]["countdown"]["runs"] == "v2"
    assert {"app": "countdown", "version": "v1", "responses": 2} in overview["waiting_for_version"]
    for rid in rids:
        assert client.responses.retrieve(rid).status == "in_progress"
    refused = httpx.post(f"{v2.base_url}/v1/admin/versions/v1/retire", timeout=30)
    assert refused.status_code == 403, refused.text  # a tenant cannot end others' responses
    ended = httpx.post(f"{v2.base_url}/v1/admin/versions/v1/retire", headers=ops, timeout=30).json()
    assert ended == {"version": "v1", "ended": 2}
    for rid in rids:
        final = client.responses.retrieve(rid)
        assert final.status == "failed" and "Version v1" in final.error.message
    rows = httpx.get(f"{v2.base_url}/v1/admin/responses", headers=ops, timeout=10).json()["data"]
    assert {r["id"]: r["app_version"] for r in rows}[rids[0]] == "v1"


def test_replicas_take_over_only_the_versions_they_run(
    pg_database_url: str, server_factory: Any, tmp_path: Path
) -> None:
    url = pg_database_url
    fast = {"DURABLE_RESPONSES_LEASE_SECONDS": "3"}
    a = server_factory(url, COUNTDOWN, env={**fast, "DURABLE_RESPONSES_APP_VERSION": "v1"}).start()
    v2 = server_factory(url, COUNTDOWN, env={**fast, "DURABLE_RESPONSES_APP_VERSION": "v2"}).start()
    client = a.client()
    rids = [client.responses.create(model="any", input="30 delay=0.1", background=True).id for _ in range(3)]
    wait_until(lambda: all(_texts(client.responses.retrieve(r)) for r in rids), 30)
    a.kill()
    # Beyond the dead replica's lease: v2 could have taken them by now, and must not have.
    wait_until(
        lambda: 'version="v1"} 3.0' in _metric(v2, "durable_responses_responses_waiting_for_version"), 40
    )
    seen = [len(_texts(v2.client().responses.retrieve(r))) for r in rids]
    b = server_factory(url, COUNTDOWN, env={**fast, "DURABLE_RESPONSES_APP_VERSION": "v1"}).start()
    for rid, before in zip(rids, seen, strict=True):
        final = wait_terminal(b.client(), rid, 90)
        assert final.status == "completed" and _texts(final) == [f"tick {n}" for n in range(30, -1, -1)]
        assert before < 31
    b.kill()

    # Declared compatible, a v2 replica takes v1's work.
    c = server_factory(url, COUNTDOWN, env={**fast, "DURABLE_RESPONSES_APP_VERSION": "v1"}).start()
    more = [
        c.client().responses.create(model="any", input="20 delay=0.1", background=True).id for _ in range(2)
    ]
    wait_until(lambda: all(_texts(c.client().responses.retrieve(r)) for r in more), 30)
    c.kill()
    v2c = server_factory(
        url,
        COUNTDOWN,
        env={**fast, "DURABLE_RESPONSES_APP_VERSION": "v2", "DURABLE_RESPONSES_COMPATIBLE_VERSIONS": "v1"},
    ).start()
    for rid in more:
        final = wait_terminal(v2c.client(), rid, 90)
        assert final.status == "completed" and _texts(final) == [f"tick {n}" for n in range(20, -1, -1)]
