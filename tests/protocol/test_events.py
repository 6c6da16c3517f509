from __future__ import annotations

from typing import Any

import pytest
from schema_validator import validate_event

from durable_responses.protocol import events, items
from durable_responses.protocol.request import parse_create_request
from durable_responses.protocol.response import build_response


def _resp(status: str) -> dict[str, Any]:
    req = parse_create_request({"input": "hi"})
    error = {"code": "server_error", "message": "x"} if status == "failed" else None
    return build_response(req, response_id="resp_1", status=status, created_at=1, error=error)


def _seq(event: dict[str, Any], n: int = 0) -> dict[str, Any]:
    assert "sequence_number" not in event
    event["sequence_number"] = n
    return event


MSG = items.message_item("msg_1", status="in_progress")
FC = items.function_call_item("fc_1", call_id="c", name="f", arguments="{}", status="completed")
PART = items.output_text_part("hi")


def _all_events() -> list[dict[str, Any]]:
    return [
        events.response_created(_resp("queued")),
        events.response_queued(_resp("queued")),
        events.response_in_progress(_resp("in_progress")),
        events.response_completed(_resp("completed")),
        events.response_failed(_resp("failed")),
        events.response_failed(_resp("cancelled")),
        events.response_incomplete(_resp("incomplete")),
        events.output_item_added(0, MSG),
        events.output_item_done(0, items.message_item("msg_1", status="completed", text="hi")),
        events.output_item_added(1, FC),
        events.output_item_done(1, FC),
        events.content_part_added("msg_1", 0, 0, items.output_text_part()),
        events.content_part_done("msg_1", 0, 0, PART),
        events.output_text_delta("msg_1", 0, 0, "h"),
        events.output_text_done("msg_1", 0, 0, "hi"),
        events.function_call_arguments_delta("fc_1", 1, "{"),
        events.function_call_arguments_done("fc_1", 1, "{}", "f"),
        events.error_event("boom"),
        events.error_event("boom", code="server_error", param="input"),
    ]


@pytest.mark.parametrize("event", _all_events(), ids=lambda e: e["type"])
def test_every_builder_validates(event: dict[str, Any]) -> None:
    validate_event(_seq(event, 3))


def test_fields() -> None:
    delta = events.output_text_delta("msg_1", 2, 0, "x")
    assert delta == {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 2,
        "content_index": 0,
        "delta": "x",
        "logprobs": [],
    }
    done = events.function_call_arguments_done("fc_1", 1, '{"a":1}', "f")
    assert done["arguments"] == '{"a":1}' and done["name"] == "f"
    err = events.error_event("boom", code="c", param="p")
    assert (err["message"], err["code"], err["param"]) == ("boom", "c", "p")
    assert err["error"]["message"] == "boom"


def test_builders_do_not_copy_inputs() -> None:
    """The hot path: builders share what they are given; sinks serialize an event when it is
    emitted (tests/runtime/test_sinks.py pins that a later change does not reach it)."""
    item = items.message_item("msg_1", status="in_progress")
    event = events.output_item_added(0, item)
    assert event["item"] is item


def test_terminal_types() -> None:
    assert events.TERMINAL_EVENT_TYPES == frozenset(
        {"response.completed", "response.failed", "response.incomplete"}
    )
    cancelled = events.response_failed(_resp("cancelled"))
    assert cancelled["type"] in events.TERMINAL_EVENT_TYPES
    assert cancelled["response"]["status"] == "cancelled" and cancelled["response"]["error"] is None
