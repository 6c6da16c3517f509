"""Typed inputs (`runtime.apps.inputs`): an `Enum` or `Literal` start is built from the text that
names its value (agent-framework's simple_loop sample starts with an `Enum`, whose schema the
400 and `/v1/models` advertise as its values)."""

from __future__ import annotations

import enum
from typing import Literal

import pytest

from durable_responses.runtime.apps.inputs import InputError, spec_for_types


class Signal(enum.Enum):
    ABOVE = "above"
    INIT = "init"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


def test_an_enum_start_takes_the_value_its_schema_lists_or_the_member_name() -> None:
    spec = spec_for_types([Signal])
    assert spec.schema()["enum"] == ["above", "init"]
    assert spec.convert_text("init") is Signal.INIT
    assert spec.convert_text(" init\n") is Signal.INIT
    assert spec.convert_text('"above"') is Signal.ABOVE
    assert spec.convert_text("INIT") is Signal.INIT


def test_an_int_enum_and_a_literal_take_their_values() -> None:
    assert spec_for_types([Level]).convert_text("2") is Level.HIGH
    assert spec_for_types([Literal["a", "b"]]).convert_text("b") == "b"


def test_text_naming_no_member_is_refused_naming_the_type() -> None:
    with pytest.raises(InputError, match="'go' is not a Signal"):
        spec_for_types([Signal]).convert_text("go")
    with pytest.raises(InputError):
        spec_for_types([Literal["a", "b"]]).convert_text("c")


def test_an_enum_or_str_start_falls_back_to_the_text() -> None:
    spec = spec_for_types([Signal | str])
    assert spec.convert_text("init") is Signal.INIT
    assert spec.convert_text("anything else") == "anything else"
