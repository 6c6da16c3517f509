from __future__ import annotations

import pytest

from durable_responses.protocol import ProtocolError
from durable_responses.protocol.request import (
    ListParams,
    StreamParams,
    parse_list_params,
    parse_stream_params,
)


def test_list_defaults() -> None:
    assert parse_list_params({}) == ListParams(after=None, before=None, limit=20, order="desc")


def test_list_values() -> None:
    p = parse_list_params({"after": "msg_1", "before": "msg_9", "limit": "100", "order": "asc", "x": "y"})
    assert p == ListParams(after="msg_1", before="msg_9", limit=100, order="asc")
    assert parse_list_params({"limit": "1"}).limit == 1


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"limit": ""}, "limit"),
        ({"order": "up"}, "order"),
        ({"order": ""}, "order"),
    ],
)
def test_list_rejects(query: dict[str, str], param: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_list_params(query)
    assert info.value.status == 400
    assert info.value.param == param


def test_stream_params() -> None:
    assert parse_stream_params({}, None) == StreamParams(stream=False, starting_after=None)
    assert parse_stream_params({"stream": "true"}, None) == StreamParams(stream=True, starting_after=None)
    assert parse_stream_params({"stream": "false"}, None).stream is False
    assert parse_stream_params({"stream": "True"}, None).stream is True
    assert parse_stream_params({"stream": "true", "starting_after": "5"}, None).starting_after == 5
    assert parse_stream_params({"starting_after": "0"}, None).starting_after == 0
    assert parse_stream_params({"stream": "true"}, "12").starting_after == 12
    assert parse_stream_params({"stream": "true", "starting_after": "3"}, "12").starting_after == 3
    assert parse_stream_params({"stream": "true"}, "").starting_after is None
    assert parse_stream_params({"stream": "true", "include_obfuscation": "false"}, None).stream is True


@pytest.mark.parametrize(
    ("query", "header", "param"),
    [
        ({"stream": "yes"}, None, "stream"),
        ({"stream": ""}, None, "stream"),
        ({"starting_after": "-1"}, None, "starting_after"),
        ({"starting_after": "x"}, None, "starting_after"),
        ({"starting_after": "1e3"}, None, "starting_after"),
        ({}, "abc", "Last-Event-ID"),
        ({}, "-3", "Last-Event-ID"),
    ],
)
def test_stream_rejects(query: dict[str, str], header: str | None, param: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_stream_params(query, header)
    assert info.value.status == 400
    assert info.value.param == param
