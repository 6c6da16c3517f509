"""Continuations over a real store (SQLite and PostgreSQL): item references resolve per tenant.

The HTTP-level behaviour (refusing replies a run would fail on, typed replies, unknown call ids)
is in tests/e2e/test_continuations.py; this file checks the store read and the resolution rules
underneath it.
"""

from __future__ import annotations

import json
import time

import pytest

from durable_responses.protocol.errors import ProtocolError
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.turns.continuation import Continuations
from durable_responses.store import InputItemRow, OutputItemRow, Store, Write
from tests.store.helpers import owned, response


def _input(position: int, item: dict[str, object]) -> InputItemRow:
    return InputItemRow(position=position, item_id=str(item["id"]), data=json.dumps(item))


def _user_message(item_id: str, text: str) -> dict[str, object]:
    return {
        "type": "message",
        "id": item_id,
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
        "status": "completed",
    }


async def _seed(store: Store) -> None:
    now = time.time()
    # alice's first response: an input message and one kept and one interrupted output item.
    await store.insert_response(
        owned("resp_a1", "p1", created_at=now - 30), [_input(0, _user_message("msg_in", "original"))], []
    )
    out = {"type": "message", "id": "msg_out", "role": "assistant", "content": [], "status": "completed"}
    cut = {"type": "message", "id": "msg_cut", "role": "assistant", "content": [], "status": "incomplete"}
    await store.write_now(
        [
            Write(
                "resp_a1",
                "p1",
                items=[
                    OutputItemRow(0, "msg_out", "completed", True, json.dumps(out)),
                    OutputItemRow(1, "msg_cut", "incomplete", False, json.dumps(cut)),
                ],
            )
        ]
    )
    # A later response of alice's: it referenced msg_in (stored as sent, under that id) and echoed
    # msg_out back as an input item with its id.
    await store.insert_response(
        response("resp_a2", created_at=now - 20),
        [
            _input(0, {"type": "item_reference", "id": "msg_in"}),
            _input(1, {**out, "content": [{"type": "output_text", "text": "echoed", "annotations": []}]}),
        ],
        [],
    )
    # bob has an item with the same id as alice's, and one of his own.
    await store.insert_response(
        response("resp_b1", "bob", created_at=now - 10),
        [_input(0, _user_message("msg_in", "bob's")), _input(1, _user_message("msg_bob", "secret"))],
        [],
    )


async def test_find_items_is_scoped_by_user_and_puts_the_original_first(store: Store) -> None:
    await _seed(store)
    found = [json.loads(d) for d in await store.find_items("alice", "msg_in")]
    # The original input first, then the reference stored under its id; never bob's.
    assert [f["type"] for f in found] == ["message", "item_reference"]
    assert found[0]["content"][0]["text"] == "original"
    # An output item comes before a copy of it sent back as input.
    out = [json.loads(d) for d in await store.find_items("alice", "msg_out")]
    assert [o["content"] for o in out] == [[], [{"type": "output_text", "text": "echoed", "annotations": []}]]
    # Interrupted output items are not part of any output: not referenceable.
    assert await store.find_items("alice", "msg_cut") == []
    # Tenants are walls.
    assert await store.find_items("alice", "msg_bob") == []
    assert [json.loads(d)["content"][0]["text"] for d in await store.find_items("bob", "msg_in")] == ["bob's"]
    assert await store.find_items("mallory", "msg_in") == []
    assert len(await store.find_items("alice", "msg_in", limit=1)) == 1


async def test_resolve_references_strict_and_lenient(store: Store) -> None:
    await _seed(store)
    continuations = Continuations(
        store, HostedApp.load("durable_responses.examples.echo_agent:echo_agent"), ()
    )
    items = [
        {"type": "item_reference", "id": "msg_in"},
        _user_message("msg_new", "new"),
        {"type": "item_reference", "id": "msg_out"},
    ]
    resolved = await continuations.resolve_references("alice", items, strict=True)
    assert [r["id"] for r in resolved] == ["msg_in", "msg_new", "msg_out"]
    assert resolved[0]["content"][0]["text"] == "original" and resolved[2]["role"] == "assistant"
    # Another tenant's id reads as absent: 404 when creating, dropped when replaying history.
    with pytest.raises(ProtocolError) as refused:
        await continuations.resolve_references("bob", items, strict=True)
    assert refused.value.status == 404 and refused.value.param == "input"
    assert "msg_out" in refused.value.message
    lenient = await continuations.resolve_references("bob", items, strict=False)
    assert [r["id"] for r in lenient] == ["msg_in", "msg_new"]
    assert lenient[0]["content"][0]["text"] == "bob's"
    # Without references the items come back as they are.
    plain = [_user_message("m", "x")]
    assert await continuations.resolve_references("alice", plain, strict=True) == plain


async def test_instructions_reach_a_plain_agent_as_a_system_message_of_this_turn_only(store: Store) -> None:
    """Regression: `instructions` were echoed in the Response but never given to the agent."""
    from durable_responses.protocol.request import parse_create_request

    continuations = Continuations(
        store, HostedApp.load("durable_responses.examples.echo_agent:echo_agent"), ()
    )
    req = parse_create_request({"model": "m", "input": "hi", "instructions": "Answer in French."})
    plan = await continuations.plan("alice", req, "resp_new")
    assert [(m.role, m.text) for m in plan.messages] == [("system", "Answer in French."), ("user", "hi")]
    without = await continuations.plan("alice", parse_create_request({"model": "m", "input": "hi"}), "resp_2")
    assert [m.role for m in without.messages] == ["user"]
