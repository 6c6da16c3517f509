"""A turn whose hand-added items another turn of the conversation takes between its read and its
commit creates nothing with them: its creation claims them in its own write (all or none), then
clears its way again behind the turn that took them (`enqueue`: waits for it and starts without
the items). A real host on a real store (both
dialects); the other turn is a real creation, started right after this one's read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from durable_responses.protocol import ProtocolError
from durable_responses.protocol.ids import new_response_id
from durable_responses.protocol.request import parse_create_request
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.host import Host
from durable_responses.runtime.settings import RuntimeSettings
from durable_responses.runtime.turns.creation import Created
from durable_responses.store import TERMINAL_STATUSES, Claims, Store

APP = "durable_responses.examples.echo_agent:echo_agent"
ADDED = {"id": "msg_added", "type": "message", "role": "user", "content": "added by hand"}


@pytest.fixture
async def host(db_url: str) -> AsyncIterator[Host]:
    store = Store.open(db_url, lease_seconds=5)
    host = Host(store, HostedApp.load(APP), RuntimeSettings())
    await host.start()
    try:
        yield host
    finally:
        await host.stop()


def _race(host: Host, conversation_id: str, runs: list[Created]) -> None:
    """The next read of `conversation_id`'s hand-added items is followed at once by another turn
    of the conversation that takes them (created before the reader goes on; kept in `runs`)."""
    take = host.conversations.take
    raced = False

    async def racing(user_id: str, req: Any) -> Any:
        nonlocal raced
        taken = await take(user_id, req)
        if not raced and taken[0]:
            raced = True
            body = {"input": "first", "conversation": conversation_id}
            runs.append(await host.create(user_id, parse_create_request(body), None))
        return taken

    host.conversations.take = racing  # type: ignore[method-assign]


async def _input_ids(host: Host, rid: str) -> list[str]:
    return [row.item_id for row in await host.store.input_items(rid)]


async def _finish(runs: list[Created]) -> None:
    for created in runs:
        if created.run is not None:
            await created.run.done.wait()


async def test_a_turn_whose_items_were_taken_meanwhile_follows_the_turn_that_took_them(host: Host) -> None:
    conv = (await host.conversations.create("alice", {}, [ADDED]))["id"]
    runs: list[Created] = []
    _race(host, conv, runs)
    try:
        second = await host.create(
            "alice", parse_create_request({"input": "second", "conversation": conv}), None
        )
        runs.append(second)
        first = runs[0]
        # The other turn has the item; this one waited for it to end (enqueue), then started
        # without it.
        assert "msg_added" in await _input_ids(host, first.response_id)
        assert "msg_added" not in await _input_ids(host, second.response_id)
        row = await host.store.get_response(first.response_id, "alice")
        assert row is not None and row.status in TERMINAL_STATUSES
    finally:
        await _finish(runs)
    # Nothing is left to take: a next turn claims only the conversation.
    assert await host.conversations.take(
        "alice", parse_create_request({"input": "x", "conversation": conv})
    ) == ([], Claims("alice", conv))


async def test_a_rejecting_turn_whose_items_were_taken_meanwhile_never_holds_them(host: Host) -> None:
    """`reject` clears its way again too: refused (409 `conversation_busy`, nothing created)
    while the turn that took the items runs, created without them once it has ended (the echo
    agent ends either way first, depending on the machine)."""
    conv = (await host.conversations.create("alice", {}, [ADDED]))["id"]
    runs: list[Created] = []
    _race(host, conv, runs)
    req = parse_create_request({"input": "second", "conversation": conv})
    rid = new_response_id()  # (chosen, so a refusal can be seen to create nothing)
    try:
        try:
            runs.append(await host.create("alice", req, rid, double_texting="reject"))
        except ProtocolError as refused:
            assert refused.status == 409 and refused.code == "conversation_busy", refused
            assert await host.store.get_response(rid, None) is None
        else:
            assert "msg_added" not in await _input_ids(host, rid)
        assert "msg_added" in await _input_ids(host, runs[0].response_id)
    finally:
        await _finish(runs)


async def test_a_first_use_whose_conversation_was_deleted_meanwhile_is_a_404(host: Host) -> None:
    """A conversation id read absent (a first use) that another turn creates and a client deletes
    before this turn's write: the write refuses it (404, as a conversation read deleted), nothing
    created, the conversation stays deleted."""
    conv = "conv_deleted_meanwhile"
    take = host.conversations.take
    runs: list[Created] = []
    raced = False

    async def racing(user_id: str, req: Any) -> Any:
        nonlocal raced
        taken = await take(user_id, req)
        if not raced:
            raced = True
            body = {"input": "first", "conversation": conv}
            runs.append(await host.create(user_id, parse_create_request(body), None))
            await host.conversations.delete(user_id, conv)
        return taken

    host.conversations.take = racing  # type: ignore[method-assign]
    try:
        await _refused_as_deleted(host, conv)
    finally:
        await _finish(runs)


async def _refused_as_deleted(host: Host, conv: str) -> None:
    """A turn of `conv` (deleted between its read and its write) is a 404 (param
    conversation_id), nothing created, and the conversation stays deleted."""
    rid = new_response_id()
    with pytest.raises(ProtocolError) as refused:
        await host.create("alice", parse_create_request({"input": "second", "conversation": conv}), rid)
    assert refused.value.status == 404 and refused.value.param == "conversation_id", refused.value
    assert await host.store.get_response(rid, None) is None
    row = await host.store.conversations.get("alice", conv, deleted=True)
    assert row is not None and row.deleted_at is not None


async def test_a_turn_whose_conversation_was_deleted_after_its_read_is_a_404(host: Host) -> None:
    """A turn of a live conversation (a turn before it, nothing added by hand) whose conversation
    a client deletes between this turn's read and its write: the write refuses it (404), nothing
    created, the conversation stays deleted."""
    conv = (await host.conversations.create("alice", {}, []))["id"]
    runs = [await host.create("alice", parse_create_request({"input": "first", "conversation": conv}), None)]
    await _finish(runs)
    take = host.conversations.take

    async def deleting(user_id: str, req: Any) -> Any:
        taken = await take(user_id, req)
        await host.conversations.delete(user_id, conv)
        return taken

    host.conversations.take = deleting  # type: ignore[method-assign]
    await _refused_as_deleted(host, conv)
