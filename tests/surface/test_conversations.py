"""The Conversations API with the unmodified openai SDK, on SQLite and PostgreSQL.

The whole flow of issue 13 (create with items, three turns with `conversation=conv.id`, the
item list in both orders with paging, an item added by hand that the next turn uses, delete),
every object validated against the SDK's own types; then a workflow's turn taking hand-added
items as input, tenant walls, and the errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.conversations import (
    Conversation,
    ConversationDeletedResource,
    ConversationItem,
    ConversationItemList,
)
from pydantic import TypeAdapter

from tests.support.inprocess import InProcessServer

ITEM = TypeAdapter(ConversationItem)


@pytest.fixture
def agent_server(database_url: str) -> Iterator[InProcessServer]:
    with InProcessServer(database_url, "durable_responses.examples.echo_agent:echo_agent") as srv:
        yield srv


def _texts(items: list[Any]) -> list[str]:
    out = []
    for item in items:
        assert item.type == "message", item
        out.append("".join(getattr(c, "text", "") for c in item.content))
    return out


def _all_pages(client: openai.OpenAI, conv_id: str, order: str, limit: int) -> tuple[list[Any], int]:
    pages = 0
    items: list[Any] = []
    page = client.conversations.items.list(conv_id, order=order, limit=limit)  # type: ignore[arg-type]
    while True:
        pages += 1
        ConversationItemList.model_validate(page.model_dump())
        items.extend(page.data)
        if not page.has_more:
            return items, pages
        page = client.conversations.items.list(conv_id, order=order, limit=limit, after=page.data[-1].id)  # type: ignore[arg-type]


def test_the_whole_conversations_flow(agent_server: InProcessServer) -> None:
    client = agent_server.client()
    conv = client.conversations.create(
        items=[
            {"type": "message", "role": "user", "content": "one"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "two"}]},
        ],
        metadata={"topic": "numbers"},
    )
    Conversation.model_validate(conv.model_dump())
    assert conv.id.startswith("conv_") and conv.metadata == {"topic": "numbers"}
    assert client.conversations.retrieve(conv.id).model_dump() == conv.model_dump()

    replies = []
    for word in ("three", "four", "five"):
        r = client.responses.create(model="any", input=word, conversation=conv.id)
        assert r.conversation is not None and r.conversation.id == conv.id
        replies.append(r.output_text)
    # The model saw the conversation's items as history, each exactly once.
    assert replies == ["echo: three (turn 3)", "echo: four (turn 4)", "echo: five (turn 5)"]

    expected = ["one", "two", "three", *replies[:1], "four", replies[1], "five", replies[2]]
    asc, pages = _all_pages(client, conv.id, "asc", 3)
    assert _texts(asc) == expected and pages == 3
    desc, _ = _all_pages(client, conv.id, "desc", 2)
    assert _texts(desc) == list(reversed(expected))
    assert [i.id for i in desc] == [i.id for i in reversed(asc)]
    # The SDK's own auto-pagination walks the same list.
    assert [i.id for i in client.conversations.items.list(conv.id, order="asc", limit=2)] == [
        i.id for i in asc
    ]
    for item in asc:
        ITEM.validate_python(item.model_dump())
        got = client.conversations.items.retrieve(item.id, conversation_id=conv.id)
        assert got.id == item.id

    # An item added by hand reaches the next turn once (the agent's stored session holds the rest).
    added = client.conversations.items.create(
        conv.id, items=[{"type": "message", "role": "user", "content": "six"}]
    )
    ConversationItemList.model_validate(added.model_dump())
    assert _texts(added.data) == ["six"]
    r = client.responses.create(model="any", input="seven", conversation=conv.id)
    assert r.output_text == "echo: seven (turn 7)"
    asc, _ = _all_pages(client, conv.id, "asc", 100)
    assert _texts(asc)[-3:] == ["six", "seven", "echo: seven (turn 7)"]
    assert [i.id for i in asc].count(added.data[0].id) == 1

    # Metadata update, item delete (the conversation is returned), conversation delete.
    updated = client.conversations.update(conv.id, metadata={"topic": "more numbers"})
    assert updated.metadata == {"topic": "more numbers"}
    after_delete = client.conversations.items.delete(asc[0].id, conversation_id=conv.id)
    Conversation.model_validate(after_delete.model_dump())
    remaining, _ = _all_pages(client, conv.id, "asc", 100)
    assert _texts(remaining)[0] == "two"
    deleted = client.conversations.delete(conv.id)
    ConversationDeletedResource.model_validate(deleted.model_dump())
    assert deleted.model_dump() == {"id": conv.id, "object": "conversation.deleted", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conv.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="any", input="eight", conversation=conv.id)


def test_a_platform_conversation_id_is_created_by_first_use(agent_server: InProcessServer) -> None:
    client = agent_server.client()
    r = client.responses.create(model="any", input="hello", conversation="foundry-chat-123")
    assert r.output_text == "echo: hello (turn 1)"
    assert client.conversations.retrieve("foundry-chat-123").id == "foundry-chat-123"
    items = client.conversations.items.list("foundry-chat-123", order="asc")
    assert _texts(items.data) == ["hello", "echo: hello (turn 1)"]


def test_tenant_walls_and_errors(agent_server: InProcessServer) -> None:
    alice = agent_server.client(default_headers={"x-agent-user-id": "alice"})
    bob = agent_server.client(default_headers={"x-agent-user-id": "bob"})
    conv = alice.conversations.create(items=[{"type": "message", "role": "user", "content": "secret"}])
    item_id = alice.conversations.items.list(conv.id).data[0].id
    for call in (
        lambda: bob.conversations.retrieve(conv.id),
        lambda: bob.conversations.update(conv.id, metadata={}),
        lambda: bob.conversations.items.list(conv.id),
        lambda: bob.conversations.items.retrieve(item_id, conversation_id=conv.id),
        lambda: bob.conversations.items.delete(item_id, conversation_id=conv.id),
        lambda: bob.conversations.items.create(conv.id, items=[{"role": "user", "content": "x"}]),
        lambda: bob.conversations.delete(conv.id),
    ):
        with pytest.raises(openai.NotFoundError):
            call()
    assert alice.conversations.retrieve(conv.id).id == conv.id
    base = agent_server.base_url
    h = {"x-agent-user-id": "alice"}
    too_many = [{"role": "user", "content": str(i)} for i in range(21)]
    r = httpx.post(f"{base}/v1/conversations/{conv.id}/items", json={"items": too_many}, headers=h)
    assert r.status_code == 400 and r.json()["error"]["param"] == "items"
    r = httpx.post(f"{base}/v1/conversations", json={"metadata": {"k": 1}}, headers=h)
    assert r.status_code == 400 and r.json()["error"]["param"] == "metadata"
    r = httpx.get(f"{base}/conversations/{conv.id}/items?after=nope", headers=h)
    assert r.status_code == 400 and r.json()["error"]["param"] == "after"
    r = httpx.get(f"{base}/v1/conversations/conv_missing", headers=h)
    assert r.status_code == 404 and set(r.json()["error"]) == {"message", "type", "param", "code"}


def test_a_workflow_turn_takes_hand_added_items_as_its_input(database_url: str) -> None:
    with InProcessServer(database_url, "durable_responses.examples.echo:echo") as srv:
        client = srv.client()
        conv = client.conversations.create()
        client.conversations.items.create(conv.id, items=[{"role": "user", "content": "added by hand"}])
        # The echo workflow answers the last user message of its input: the item added by hand.
        r = client.responses.create(model="any", conversation=conv.id, input=[])
        assert r.output_text == "added by hand"
        texts = _texts(client.conversations.items.list(conv.id, order="asc").data)
        assert texts == ["added by hand", "added by hand"]
        # Taken once: the next turn does not see it again.
        r = client.responses.create(model="any", conversation=conv.id, input="next")
        assert r.output_text == "next"
