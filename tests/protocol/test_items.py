from __future__ import annotations

import pytest
from schema_validator import validate, validate_item

from durable_responses.protocol import items


@pytest.mark.parametrize("status", ["in_progress", "completed", "incomplete"])
def test_message_item(status: str) -> None:
    empty = items.message_item("msg_1", status=status)
    assert empty["content"] == []
    validate_item(empty)
    full = items.message_item("msg_1", status=status, text="hello")
    assert full["content"] == [{"type": "output_text", "text": "hello", "annotations": [], "logprobs": []}]
    assert full["role"] == "assistant"
    validate_item(full)


def test_output_text_part() -> None:
    validate("OutputTextContent", items.output_text_part())
    validate("OutputTextContent", items.output_text_part("x"))
    assert items.output_text_part() is not items.output_text_part()


@pytest.mark.parametrize("status", ["in_progress", "completed", "incomplete"])
def test_function_call_item(status: str) -> None:
    item = items.function_call_item(
        "fc_1", call_id="call_1", name="request_info", arguments="{}", status=status
    )
    validate_item(item)
    assert item["call_id"] == "call_1"


def test_bad_status() -> None:
    with pytest.raises(ValueError):
        items.message_item("m", status="done")
    with pytest.raises(ValueError):
        items.function_call_item("f", call_id="c", name="n", arguments="", status="failed")
