"""Double-texting: a new turn while the turn it follows still runs, by each strategy.

On both databases, with the countdown workflow (a background turn ticks for seconds):
`enqueue` (the default) runs the new turn after the running one; `reject` is a 409 that creates
nothing; `interrupt` cancels the running turn (its ticks so far stay) and runs the new one;
`rollback` cancels and deletes it, and a `previous_response_id` chain continues from the turn
before it. With kill -9 in the middle: an interrupted or rolled-back turn stays so and the new
turn, resumed by recovery, completes; a request that was waiting (enqueue) when the server died
created nothing, and its retry with the same `Idempotency-Key` runs once, after the turn it
follows.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.inprocess import InProcessServer
from tests.support.responses import wait_terminal
from tests.support.waits import wait_until

COUNTDOWN = "durable_responses.examples.countdown:countdown"


def _ticks(response: Any) -> list[str]:
    return [o.content[0].text for o in response.output if o.type == "message"]


def _running(client: Any, rid: str) -> None:
    """Wait until `rid` has shown its first tick (it is really running)."""
    wait_until(lambda: _ticks(client.responses.retrieve(rid)), 30, message=f"{rid} never ticked")


def _metrics(srv: Any) -> str:
    return httpx.get(f"{srv.base_url}/metrics", timeout=10).text


def _turn(client: Any, conv: str, text: str, strategy: str | None = None, key: str | None = None) -> Any:
    headers = {"x-double-texting": strategy} if strategy else {}
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.responses.create(
        model="any", input=text, conversation=conv, background=True, extra_headers=headers
    )


def test_enqueue_is_the_default_and_runs_after(database_url: str) -> None:
    with InProcessServer(database_url, COUNTDOWN) as srv:
        client = srv.client()
        conv = client.conversations.create().id
        first = _turn(client, conv, "15 delay=0.05")
        second = _turn(client, conv, "2 delay=0")  # waits for the first to end
        a, b = wait_terminal(client, first.id), wait_terminal(client, second.id)
        assert a.status == "completed" and _ticks(a) == [f"tick {n}" for n in range(15, -1, -1)]
        assert b.status == "completed" and _ticks(b) == ["tick 2", "tick 1", "tick 0"]
        assert b.created_at >= a.completed_at
        # The same by metadata, on a previous_response_id chain.
        third = client.responses.create(
            model="any", input="10 delay=0.05", previous_response_id=b.id, background=True
        )
        fourth = client.responses.create(
            model="any",
            input="1 delay=0",
            previous_response_id=third.id,
            metadata={"double_texting": "enqueue"},
        )
        assert fourth.status == "completed" and wait_terminal(client, third.id).status == "completed"


def test_reject_is_a_409_that_creates_nothing(database_url: str) -> None:
    with InProcessServer(database_url, COUNTDOWN) as srv:
        client = srv.client()
        conv = client.conversations.create().id
        first = _turn(client, conv, "20 delay=0.05")
        with pytest.raises(openai.ConflictError) as refused:
            _turn(client, conv, "1 delay=0", "reject")
        assert refused.value.code == "conversation_busy" and first.id in str(refused.value.message)
        assert wait_terminal(client, first.id).status == "completed"
        items = client.conversations.items.list(conv).data
        assert not any(getattr(i, "role", None) == "user" and "1 delay=0" in str(i) for i in items)
        with pytest.raises(openai.BadRequestError):  # an unknown strategy is the client's mistake
            _turn(client, conv, "1 delay=0", "shove")


def test_interrupt_cancels_the_running_turn_and_keeps_its_output(database_url: str) -> None:
    with InProcessServer(database_url, COUNTDOWN) as srv:
        client = srv.client()
        conv = client.conversations.create().id
        first = _turn(client, conv, "200 delay=0.05")
        _running(client, first.id)
        second = _turn(client, conv, "2 delay=0", "interrupt")
        a = client.responses.retrieve(first.id)
        assert a.status == "cancelled" and 0 < len(_ticks(a)) < 201
        assert wait_terminal(client, second.id).status == "completed"
        texts = " ".join(str(i) for i in client.conversations.items.list(conv, limit=100).data)
        assert "200 delay=0.05" in texts and "2 delay=0" in texts


def test_rollback_forgets_the_running_turn(database_url: str) -> None:
    with InProcessServer(database_url, COUNTDOWN) as srv:
        client = srv.client()
        base = client.responses.create(model="any", input="1 delay=0")
        running = client.responses.create(
            model="any", input="200 delay=0.05", previous_response_id=base.id, background=True
        )
        _running(client, running.id)
        new = client.responses.create(
            model="any",
            input="2 delay=0",
            previous_response_id=running.id,
            extra_headers={"x-double-texting": "rollback"},
        )
        assert new.status == "completed" and new.previous_response_id == base.id
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(running.id)
        # In a conversation: the rolled-back turn's input and output are gone from it.
        conv = client.conversations.create().id
        doomed = _turn(client, conv, "300 delay=0.05")
        _running(client, doomed.id)
        kept = _turn(client, conv, "1 delay=0", "rollback")
        assert wait_terminal(client, kept.id).status == "completed"
        texts = " ".join(str(i) for i in client.conversations.items.list(conv, limit=100).data)
        assert "300 delay=0.05" not in texts and "1 delay=0" in texts


@pytest.mark.crash
@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_kill_9_while_the_new_turn_runs(
    database_url: str, server_factory: Any, tmp_path: Path, strategy: str
) -> None:
    srv = server_factory(database_url, COUNTDOWN, workdir=tmp_path / "w").start()
    client = srv.client()
    conv = client.conversations.create().id
    first = _turn(client, conv, "300 delay=0.05")
    _running(client, first.id)
    second = _turn(client, conv, "40 delay=0.05", strategy)
    _running(client, second.id)
    srv.kill()
    again = server_factory(database_url, COUNTDOWN, workdir=tmp_path / "w").start()
    client = again.client()
    done = wait_terminal(client, second.id, timeout=90)
    assert done.status == "completed" and _ticks(done) == [f"tick {n}" for n in range(40, -1, -1)]
    if strategy == "rollback":
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(first.id)
    else:
        assert client.responses.retrieve(first.id).status == "cancelled"


@pytest.mark.crash
def test_kill_9_while_a_turn_waits_then_its_retry_runs_once(
    database_url: str, server_factory: Any, tmp_path: Path
) -> None:
    srv = server_factory(database_url, COUNTDOWN, workdir=tmp_path / "w").start()
    client = srv.client()
    conv = client.conversations.create().id
    first = _turn(client, conv, "60 delay=0.1")
    _running(client, first.id)
    outcome: list[Any] = []

    def waiting_turn() -> None:
        try:
            outcome.append(_turn(client, conv, "1 delay=0", key="turn-2"))
        except Exception as exc:  # the server dies under it
            outcome.append(exc)

    waiter = threading.Thread(target=waiting_turn)
    waiter.start()
    # The request is in and waits server-side (counted when it finds the running turn).
    wait_until(
        lambda: 'double_texting_total{strategy="enqueue"} 1.0' in _metrics(srv),
        30,
        message=lambda: [line for line in _metrics(srv).splitlines() if "double" in line],
    )
    srv.kill()
    waiter.join(30)
    assert outcome and isinstance(outcome[0], openai.APIConnectionError), outcome
    again = server_factory(database_url, COUNTDOWN, workdir=tmp_path / "w").start()
    client = again.client()
    retry = _turn(client, conv, "1 delay=0", key="turn-2")
    a = wait_terminal(client, first.id, timeout=90)
    b = wait_terminal(client, retry.id, timeout=90)
    assert a.status == "completed" and _ticks(a) == [f"tick {n}" for n in range(60, -1, -1)]
    assert b.status == "completed" and b.created_at >= a.completed_at
    turns = [
        r for r in client.conversations.items.list(conv, limit=100).data if getattr(r, "role", "") == "user"
    ]
    assert len(turns) == 2, turns
