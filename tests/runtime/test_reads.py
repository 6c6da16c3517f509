"""The walk of one `background` + `stream` creation, and of the turn that continues it, reads
nothing twice: a continuation's facts (the response it follows, its pending requests, the
checkpoint or session it continues) are read once and handed on (`turn_facts`), and restoring
the checkpoint reads no row the plan already holds. A real host on a real store (SQLite and
PostgreSQL), every store call of the walk recorded with its arguments."""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import delete

from durable_responses.protocol.request import parse_create_request
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.host import Host
from durable_responses.runtime.settings import RuntimeSettings
from durable_responses.store import Store
from durable_responses.store._tables import checkpoints

Call = tuple[str, str]
_WALK: contextvars.ContextVar[list[Call] | None] = contextvars.ContextVar("walk", default=None)


def _record(target: object, prefix: str) -> None:
    """Record each call of `target`'s public coroutine methods made inside a walk (the walk's
    own task and the tasks it starts, which copy its context: the run, the relay)."""
    for name in dir(target):
        if name.startswith("_"):
            continue
        method = getattr(target, name, None)
        if not inspect.iscoroutinefunction(method):
            continue

        def wrap(fn: Callable[..., Awaitable[Any]], label: str) -> Callable[..., Awaitable[Any]]:
            @functools.wraps(fn)
            async def recorded(*args: Any, **kwargs: Any) -> Any:
                walk = _WALK.get()
                if walk is not None:
                    walk.append((label, repr((args, sorted(kwargs.items())))))
                return await fn(*args, **kwargs)

            return recorded

        setattr(target, name, wrap(method, prefix + name))


@pytest.fixture
async def host(db_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Host]:
    store = Store.open(db_url, lease_seconds=5)
    _record(store, "")
    for part in ("conversations", "versions", "webhooks", "ops"):
        _record(getattr(store, part), part + ".")
    host = Host(store, HostedApp.load(request.param), RuntimeSettings())
    await host.start()
    try:
        yield host
    finally:
        await host.stop()


async def _walk(host: Host, body: dict[str, Any]) -> tuple[str, list[Call]]:
    """Create a background, streamed response and read its stream to the end."""
    calls: list[Call] = []
    token = _WALK.set(calls)
    try:
        created = await host.create(
            "alice", parse_create_request({**body, "stream": True, "background": True}), None
        )
        async for _ in host.stream_created(created):
            pass
        run = created.run
        if run is not None:
            await run.done.wait()
    finally:
        _WALK.reset(token)
    return created.response_id, calls


def _repeated(calls: list[Call]) -> dict[Call, int]:
    return {call: n for call, n in Counter(calls).items() if n > 1}


APPS = {
    "agent": "durable_responses.examples.echo_agent:echo_agent",
    "workflow": "durable_responses.examples.approval:approval",
}


@pytest.mark.parametrize("host", list(APPS.values()), ids=list(APPS), indirect=True)
async def test_a_creation_and_its_continuation_read_nothing_twice(host: Host) -> None:
    first, calls = await _walk(host, {"input": "hello"})
    assert [name for name, _ in calls].count("insert_response") == 1
    assert not _repeated(calls), _repeated(calls)

    body = await host.get("alice", first)
    asked = [o["call_id"] for o in body["output"] if o["type"] == "function_call"]
    answer: Any = (
        [{"type": "function_call_output", "call_id": asked[0], "output": "yes"}] if asked else "again"
    )
    second, calls = await _walk(host, {"input": answer, "previous_response_id": first})
    names = [name for name, _ in calls]
    # What a continuation reads (each once): the response it follows and its pending requests.
    assert names.count("get_response") == 1 and names.count("pending_requests") == 1, names
    assert not _repeated(calls), _repeated(calls)
    assert (await host.get("alice", second))["status"] == "completed"


@pytest.mark.parametrize("host", [APPS["agent"]], ids=["agent"], indirect=True)
async def test_a_plain_agents_history_rebuilt_without_a_session_reads_nothing_twice(host: Host) -> None:
    first, _ = await _walk(host, {"input": "hello"})
    # Its session gone (as a turn that stored none): the next turn rebuilds the history from
    # the stored items, and reads the response it follows once for both.
    async with host.store.db.writer.begin() as conn:
        await conn.execute(delete(checkpoints).where(checkpoints.c.response_id == first))
    second, calls = await _walk(host, {"input": "again", "previous_response_id": first})
    names = [name for name, _ in calls]
    assert names.count("get_response") == 1 and "input_items" in names and "output_items" in names, names
    assert not _repeated(calls), _repeated(calls)
    body = await host.get("alice", second)
    assert body["status"] == "completed"
