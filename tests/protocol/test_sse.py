from __future__ import annotations

import json

import pytest

from durable_responses.protocol import sse


def test_frame() -> None:
    data = sse.dumps({"type": "response.created", "text": "a\nb", "u": "é"})
    assert "\n" not in data
    out = sse.frame("response.created", 7, data)
    assert out == f"event: response.created\nid: 7\ndata: {data}\n\n".encode()
    assert json.loads(out.decode().split("data: ", 1)[1]) == {
        "type": "response.created",
        "text": "a\nb",
        "u": "é",
    }


def test_dumps_is_compact_and_unicode() -> None:
    assert sse.dumps({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'


def test_frame_refuses_newlines() -> None:
    with pytest.raises(ValueError):
        sse.frame("x", 1, '{"a":\n1}')
    with pytest.raises(ValueError):
        sse.frame("x\n", 1, "{}")


def test_comment() -> None:
    assert sse.comment() == b": keep-alive\n\n"
    assert sse.comment("hi") == b": hi\n\n"


def test_frames_are_each_frame_in_order() -> None:
    events = [(3, "response.created", sse.dumps({"a": "x\ny"})), (4, "response.output_text.delta", "{}")]
    assert sse.frames(events) == b"".join(sse.frame(t, seq, d) for seq, t, d in events)
    assert sse.frames([]) == b""


@pytest.mark.parametrize(("type_", "data"), [("x", '{"a":\n1}'), ("x\n", "{}"), ("x", '{"a":"\r"}')])
def test_frames_refuse_newlines(type_: str, data: str) -> None:
    with pytest.raises(ValueError):
        sse.frames([(1, "ok", "{}"), (2, type_, data)])
