from __future__ import annotations

import re
import time

import pytest

from durable_responses.protocol import ids


def test_new_response_id() -> None:
    a, b = ids.new_response_id(), ids.new_response_id()
    assert re.fullmatch(r"resp_[0-9a-f]{48}", a)
    assert a != b
    assert ids.is_valid_response_id(a)


def test_new_response_ids_sort_by_creation_time() -> None:
    """Time first (milliseconds, 12 hex characters), so responses made together are neighbours
    in the indexes keyed by response id; 144 random bits after it keep ids of the same
    millisecond apart and unguessable."""
    before = time.time_ns() // 1_000_000
    a = ids.new_response_id()
    time.sleep(0.003)
    b = ids.new_response_id()
    after = time.time_ns() // 1_000_000
    assert a < b
    assert before <= int(a[5:17], 16) <= int(b[5:17], 16) <= after
    same_ms = {ids.new_response_id()[17:] for _ in range(1000)}
    assert len(same_ms) == 1000


@pytest.mark.parametrize("value", ["resp_1", "caresp_abc-DEF_9", "resp_" + "a" * 100, "caresp_" + "z" * 100])
def test_valid_response_ids(value: str) -> None:
    assert ids.is_valid_response_id(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "resp_",
        "resp",
        "msg_1",
        "resp_a b",
        "resp_a/b",
        "resp_" + "a" * 101,
        "RESP_1",
        "resp_1\n",
        "resp_é",
    ],
)
def test_invalid_response_ids(value: str) -> None:
    assert not ids.is_valid_response_id(value)


def test_conversation_ids() -> None:
    assert ids.is_valid_conversation_id("conv_123")
    assert ids.is_valid_conversation_id("a" * 128)
    assert not ids.is_valid_conversation_id("a" * 129)
    assert not ids.is_valid_conversation_id("")
    assert not ids.is_valid_conversation_id("a;drop")
    assert not ids.is_valid_conversation_id("a\n")


def test_user_ids() -> None:
    assert ids.is_valid_user_id("alice@example.com")
    assert ids.is_valid_user_id("Ünïcode user")
    assert ids.is_valid_user_id("u" * 256)
    assert not ids.is_valid_user_id("u" * 257)
    assert not ids.is_valid_user_id("")
    assert not ids.is_valid_user_id("a\x00b")
    assert not ids.is_valid_user_id("a\nb")


def test_output_item_ids_are_deterministic() -> None:
    rid = "resp_abc"
    a = ids.output_item_id(rid, 0, "message")
    assert a == ids.output_item_id(rid, 0, "message")
    assert re.fullmatch(r"msg_[0-9a-f]{40}", a)
    assert ids.output_item_id(rid, 1, "function_call").startswith("fc_")
    assert ids.output_item_id(rid, 1, "reasoning").startswith("rs_")
    assert ids.output_item_id(rid, 1, "other").startswith("item_")
    assert ids.output_item_id(rid, 0, "message") != ids.output_item_id(rid, 1, "message")
    assert ids.output_item_id(rid, 0, "message") != ids.output_item_id("resp_abd", 0, "message")


def test_input_item_ids_are_deterministic() -> None:
    a = ids.input_item_id("resp_abc", 3)
    assert a == ids.input_item_id("resp_abc", 3)
    assert re.fullmatch(r"in_[0-9a-f]{40}", a)
    assert a != ids.input_item_id("resp_abc", 4)
