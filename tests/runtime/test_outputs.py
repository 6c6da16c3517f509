"""What a workflow's output value shows (`runtime.apps.outputs`): a value that is not text is
shown as JSON text, a list of strings too (agent-framework's map_reduce sample yields the list
of its reducers' file paths: joined, they could not be told apart)."""

from __future__ import annotations

import json

from agent_framework import Content, Message

from durable_responses.runtime.apps.outputs import output_value


def test_a_list_of_strings_is_shown_as_a_json_array() -> None:
    paths = ["/tmp/reduced_0.txt", "/tmp/reduced_1.txt"]
    assert json.loads(output_value(paths)) == paths


def test_text_contents_and_messages_are_shown_as_they_are() -> None:
    assert output_value("plain text") == "plain text"
    messages = [Message("assistant", ["a"]), Message("assistant", ["b"])]
    assert output_value(messages) is messages
    contents = [Content.from_text("a")]
    assert output_value(contents) is contents


def test_numbers_and_mixed_lists_are_json() -> None:
    assert output_value([2.5, 10]) == "[2.5, 10]"
    assert output_value(42) == "42"
