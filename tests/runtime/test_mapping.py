"""`ItemMapper` alone: an agent's update stream in, Responses events out (a list as the sink)."""

from __future__ import annotations

from typing import Any

from agent_framework import AgentResponseUpdate, Content

from durable_responses.protocol import events as ev
from durable_responses.runtime.pauses.approval_calls import AnsweredCall, held_calls
from durable_responses.runtime.run.mapping import SERVER_TOOLS_FUNCTION, ItemMapper, MapperSetup
from durable_responses.runtime.run.open_items import ClosedItem

RID = "resp_map"


def _mapper(**setup: Any) -> tuple[ItemMapper, list[dict[str, Any]], list[ClosedItem]]:
    events: list[dict[str, Any]] = []
    early: list[ClosedItem] = []
    return ItemMapper(MapperSetup(RID, events.append, **setup), on_closed=early.append), events, early


def _text(text: str, *, message_id: str | None = "m1", replace: bool = False) -> AgentResponseUpdate:
    content = Content.from_text(text, merge_mode="replace") if replace else Content.from_text(text)
    return AgentResponseUpdate(contents=[content], role="assistant", author_name="bot", message_id=message_id)


def _update(*contents: Content, finish_reason: Any = None) -> AgentResponseUpdate:
    return AgentResponseUpdate(
        contents=list(contents), role="assistant", author_name="bot", finish_reason=finish_reason
    )


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_streamed_text_is_one_message_item_closed_only_at_the_commit_point() -> None:
    mapper, events, _ = _mapper()
    for chunk in ("Hel", "lo", "!"):
        mapper.feed(_text(chunk))
    assert _types(events) == [
        ev.OUTPUT_ITEM_ADDED,
        "response.content_part.added",
        ev.OUTPUT_TEXT_DELTA,
        ev.OUTPUT_TEXT_DELTA,
        ev.OUTPUT_TEXT_DELTA,
    ]
    assert [e["delta"] for e in events if e["type"] == ev.OUTPUT_TEXT_DELTA] == ["Hel", "lo", "!"]
    assert mapper.has_open and mapper.next_output_index == 1

    opened = len(events)
    (closed,) = mapper.close_all("completed")
    closing = events[opened:]
    assert _types(closing) == [ev.OUTPUT_TEXT_DONE, "response.content_part.done", ev.OUTPUT_ITEM_DONE]
    assert closing[0]["text"] == "Hello!"
    assert closing[-1]["item"]["status"] == "completed"
    assert (closed.output_index, closed.status, closed.included) == (0, "completed", True)
    assert closed.item["content"][0]["text"] == "Hello!"
    assert not mapper.has_open


def test_text_repeated_whole_after_its_deltas_is_shown_once() -> None:
    mapper, events, _ = _mapper()
    mapper.feed(_text("Hi "))
    mapper.feed(_text("there"))
    mapper.feed(_text("Hi there", replace=True))
    assert [e["delta"] for e in events if e["type"] == ev.OUTPUT_TEXT_DELTA] == ["Hi ", "there"]
    (closed,) = mapper.close_all()
    assert closed.item["content"][0]["text"] == "Hi there"


def test_indexes_continue_where_the_response_stands_and_are_never_reused() -> None:
    mapper, events, _ = _mapper(next_output_index=4)
    mapper.feed(_text("one", message_id="a"))
    mapper.feed(_text("two", message_id="b"))
    added = [e for e in events if e["type"] == ev.OUTPUT_ITEM_ADDED]
    assert [e["output_index"] for e in added] == [4, 5]
    assert len({e["item"]["id"] for e in added}) == 2
    mapper.close_all()
    mapper.feed(_text("three", message_id="c"))
    assert events[-3]["type"] == ev.OUTPUT_ITEM_ADDED and events[-3]["output_index"] == 6


def test_each_model_response_of_an_author_is_its_own_message_item() -> None:
    """The Responses client sends no message ids; an agent run again in the same superstep
    (handoff's autonomous mode) says each reply in a new model response: a message item each,
    while the chunks of one model response (its id on the first and last) stay one item."""
    mapper, events, _ = _mapper()
    for response_id, chunks in (("resp_a", ("one ", "reply")), ("resp_b", ("two ", "reply"))):
        mapper.feed(
            AgentResponseUpdate(contents=[], role="assistant", author_name="bot", response_id=response_id)
        )
        for chunk in chunks:
            mapper.feed(_text(chunk, message_id=None))
        mapper.feed(
            AgentResponseUpdate(contents=[], role="assistant", author_name="bot", response_id=response_id)
        )
    closed = mapper.close_all()
    assert [c.item["content"][0]["text"] for c in closed] == ["one reply", "two reply"]
    assert [e["output_index"] for e in events if e["type"] == ev.OUTPUT_ITEM_ADDED] == [0, 1]


def test_a_tool_the_server_ran_is_one_mcp_call_closed_at_once_and_told_to_the_pairing() -> None:
    mapper, events, early = _mapper(server_label="shop")
    mapper.feed(_update(Content.from_function_call("call_1", "lookup", arguments='{"sku":')))
    mapper.feed(_update(Content.from_function_call("call_1", "", arguments=' "A1"}')))
    assert events == []  # a call is held back until the next content says what it is
    mapper.feed(_update(Content.from_function_result("call_1", result="3")))
    mapper.feed(_text("It costs 3.", message_id="m2"))
    assert _types(events)[:2] == [ev.OUTPUT_ITEM_ADDED, ev.OUTPUT_ITEM_DONE]
    done = events[1]["item"]
    assert done["type"] == "mcp_call" and done["status"] == "completed"
    assert (done["name"], done["arguments"], done["output"], done["server_label"]) == (
        "lookup",
        '{"sku": "A1"}',
        "3",
        "shop",
    )
    assert [(c.output_index, c.status, c.included) for c in early] == [(0, "completed", True)]
    # The text after the tool is the next item; only it is left to close at the commit point.
    assert events[2]["type"] == ev.OUTPUT_ITEM_ADDED and events[2]["output_index"] == 1
    assert [c.output_index for c in mapper.close_all()] == [1]


def test_a_tool_error_is_the_mcp_calls_error() -> None:
    mapper, events, _ = _mapper()
    mapper.feed(_update(Content.from_function_call("call_9", "charge", arguments="{}")))
    mapper.feed(_update(Content.from_function_result("call_9", exception="card declined")))
    done = events[1]["item"]
    assert done["status"] == "failed"
    assert done["error"]["content"][0]["text"] == "Error: card declined"


def test_function_call_mode_shows_a_call_and_its_output_closed_at_the_commit_point() -> None:
    mapper, events, early = _mapper(server_tools=SERVER_TOOLS_FUNCTION)
    mapper.feed(_update(Content.from_function_call("call_1", "lookup", arguments="{}")))
    mapper.feed(_update(Content.from_function_result("call_1", result="3")))
    added = [e["item"]["type"] for e in events if e["type"] == ev.OUTPUT_ITEM_ADDED]
    assert added == ["function_call", "function_call_output"]
    assert ev.OUTPUT_ITEM_DONE not in _types(events) and early == []
    closed = mapper.close_all()
    assert [(c.item["type"], c.status) for c in closed] == [
        ("function_call", "completed"),
        ("function_call_output", "completed"),
    ]
    assert closed[1].item["output"] == "3"


def test_a_tool_awaiting_approval_is_an_approval_request_and_its_call_is_never_shown() -> None:
    mapper, events, _ = _mapper()
    call = Content.from_function_call("call_7", "refund", arguments='{"amount": 5}')
    mapper.feed(_update(call))
    mapper.feed(_update(Content.from_function_approval_request("apr_1", call)))
    added = [e["item"] for e in events if e["type"] == ev.OUTPUT_ITEM_ADDED]
    assert [(i["type"], i["id"], i["name"]) for i in added] == [("mcp_approval_request", "apr_1", "refund")]
    assert [a.request_id for a in mapper.approvals] == ["apr_1"]
    (closed,) = mapper.close_all()
    assert closed.item["type"] == "mcp_approval_request"


def _added(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (e["item"]["type"], e["item"].get("name", "")) for e in events if e["type"] == ev.OUTPUT_ITEM_ADDED
    ]


def test_a_server_call_held_beside_an_approval_is_not_shown_and_is_named_when_it_runs() -> None:
    """One model turn calls `lookup` (the server's) and the approval-gated `refund`:
    agent-framework runs neither and asks approval for `refund` only. The pause shows the
    approval request alone; the answering turn (its plan names the held call) shows both as
    `mcp_call` items, named, when their results arrive."""
    lookup = Content.from_function_call("call_1", "lookup", arguments='{"sku": "A1"}')
    refund = Content.from_function_call("call_7", "refund", arguments='{"amount": 5}')
    paused, events, _ = _mapper()
    paused.feed(_update(lookup, refund))
    paused.feed(_update(Content.from_function_approval_request("apr_1", refund)))
    paused.close_all()
    assert _added(events) == [("mcp_approval_request", "refund")]

    answered = {
        "call_1": AnsweredCall("lookup", '{"sku": "A1"}', None),
        "call_7": AnsweredCall("refund", '{"amount": 5}', "apr_1"),
    }
    resumed, events, _ = _mapper(answered_calls=answered)
    resumed.feed(_update(Content.from_function_result("call_1", result="3")))
    resumed.feed(_update(Content.from_function_result("call_7", result="done")))
    done = [e["item"] for e in events if e["type"] == ev.OUTPUT_ITEM_DONE]
    assert [(i["type"], i["name"], i["arguments"], i["output"]) for i in done] == [
        ("mcp_call", "lookup", '{"sku": "A1"}', "3"),
        ("mcp_call", "refund", '{"amount": 5}', "done"),
    ]
    assert [i.get("approval_request_id") for i in done] == [None, "apr_1"]


def test_beside_a_call_the_client_answers_only_that_call_is_a_function_call() -> None:
    """A declaration-only call (re-announced as `user_input_request`) is the client's; the
    server's call of the same turn, held, is not shown; if its result comes after all, it is
    shown as its `mcp_call`, named."""
    weather = Content.from_function_call("call_w", "get_weather", arguments='{"city": "Paris"}')
    lookup = Content.from_function_call("call_1", "lookup", arguments="{}")
    mapper, events, _ = _mapper()
    mapper.feed(_update(weather, lookup))
    pause = Content.from_function_call("call_w", "get_weather", arguments='{"city": "Paris"}')
    pause.user_input_request = True
    mapper.feed(_update(pause))
    mapper.feed(_text("Checking.", message_id="m2"))
    assert _added(events)[0] == ("function_call", "get_weather")
    mapper.feed(_update(Content.from_function_result("call_1", result="3")))
    mapper.close_all()
    assert [t for t, _ in _added(events)] == ["function_call", "message", "mcp_call"]
    assert _added(events)[2] == ("mcp_call", "lookup")


def test_held_calls_are_found_wherever_the_paused_state_keeps_them() -> None:
    """Live contents (a checkpoint's state) and their dict forms (a session's) alike."""
    refund = Content.from_function_call("call_7", "refund", arguments={"amount": 5})
    state = {
        "executor": {"pending": {"apr_1": Content.from_function_approval_request("apr_1", refund)}},
        "session": {
            "groups": [
                {
                    "requests": [
                        {
                            "type": "function_approval_request",
                            "function_call": {
                                "type": "function_call",
                                "call_id": "call_1",
                                "name": "lookup",
                                "arguments": '{"sku":"A1"}',
                            },
                        }
                    ]
                }
            ]
        },
    }
    assert held_calls(state) == {
        "call_7": AnsweredCall("refund", '{"amount":5}', None),
        "call_1": AnsweredCall("lookup", '{"sku":"A1"}', None),
    }


def test_a_request_the_response_announced_already_is_not_shown_again() -> None:
    """Restoring a checkpoint re-emits every pending request (recovery): one an earlier life
    announced is not a second item."""
    mapper, events, _ = _mapper(announced=frozenset({"apr_1"}))
    call = Content.from_function_call("call_7", "refund", arguments="{}")
    mapper.feed(_update(Content.from_function_approval_request("apr_1", call)))
    assert events == [] and mapper.approvals == []


def test_a_call_held_back_beside_an_approval_is_not_shown_and_the_answering_turn_names_it() -> None:
    """One reply calls `lookup` (no approval) and `refund` (approval): agent-framework holds
    `lookup` back and runs it with the approved call in the next turn. The pause shows only the
    approval request (a `function_call` would ask the client to answer it); the next turn finds
    `lookup`'s name and arguments in the stored session (`held_calls`)."""
    mapper, events, _ = _mapper()
    held = Content.from_function_call("call_8", "lookup", arguments='{"sku": "A1"}')
    call = Content.from_function_call("call_7", "refund", arguments='{"amount": 5}')
    mapper.feed(_update(held, call))
    mapper.feed(_update(Content.from_function_approval_request("apr_1", call)))
    assert [c.item["type"] for c in mapper.close_all()] == ["mcp_approval_request"]
    assert [e["item"]["type"] for e in events if e["type"] == ev.OUTPUT_ITEM_ADDED] == [
        "mcp_approval_request"
    ]

    session = {"state": {"any_provider": {"groups": [{"requests": [{"function_call": held.to_dict()}]}]}}}
    answered = held_calls(session)
    assert answered == {"call_8": AnsweredCall("lookup", '{"sku": "A1"}', None)}
    mapper, events, _ = _mapper(answered_calls=answered)
    mapper.feed(_update(Content.from_function_result("call_8", result="3")))
    done = events[1]["item"]
    assert (done["type"], done["name"], done["arguments"], done["approval_request_id"]) == (
        "mcp_call",
        "lookup",
        '{"sku": "A1"}',
        None,
    )


def test_closing_otherwise_than_completed_keeps_the_items_out_of_the_output() -> None:
    mapper, events, _ = _mapper()
    mapper.feed(_text("cut sho"))
    (closed,) = mapper.close_all("incomplete")
    assert _types(events)[-1] == ev.OUTPUT_ITEM_DONE  # no text.done for an item not completed
    assert events[-1]["item"]["status"] == "incomplete"
    assert (closed.status, closed.included) == ("incomplete", False)


def test_usage_and_a_cut_reply_are_reported() -> None:
    mapper, _, _ = _mapper()
    mapper.feed(_update(Content.from_usage({"input_token_count": 11, "output_token_count": 4})))
    mapper.feed(_update(Content.from_text("and the"), finish_reason="length"))
    assert (mapper.usage.total().input_tokens, mapper.usage.total().output_tokens) == (11, 4)
    assert mapper.finish_reason == "length"
