from __future__ import annotations

import json

import pytest
from schema_validator import validate_response

from durable_responses.protocol import items
from durable_responses.protocol.request import CreateRequest, parse_create_request
from durable_responses.protocol.response import build_response, deleted_body, list_body, usage

REQUIRED = {
    "id",
    "object",
    "created_at",
    "completed_at",
    "status",
    "incomplete_details",
    "model",
    "previous_response_id",
    "instructions",
    "output",
    "error",
    "tools",
    "tool_choice",
    "truncation",
    "parallel_tool_calls",
    "text",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "temperature",
    "reasoning",
    "usage",
    "max_output_tokens",
    "max_tool_calls",
    "store",
    "background",
    "service_tier",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
}


def _req(**body: object) -> CreateRequest:
    return parse_create_request({"input": "hi", **body})


@pytest.mark.parametrize(
    "status", ["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"]
)
def test_every_status_validates(status: str) -> None:
    kwargs: dict[str, object] = {}
    if status == "failed":
        kwargs["error"] = {"code": "server_error", "message": "boom"}
    if status == "incomplete":
        kwargs["incomplete_details"] = {"reason": "interrupted"}
    if status in ("completed", "failed", "cancelled", "incomplete"):
        kwargs["completed_at"] = 1_700_000_001
    resp = build_response(_req(), response_id="resp_1", status=status, created_at=1_700_000_000, **kwargs)  # type: ignore[arg-type]
    validate_response(resp)
    assert REQUIRED <= set(resp)
    assert len(REQUIRED) == 31
    assert resp["status"] == status
    assert resp["object"] == "response"
    assert "output_text" not in resp
    json.dumps(resp)


def test_usage_null_in_progress_zeros_when_completed() -> None:
    req = _req()
    assert build_response(req, response_id="resp_1", status="in_progress", created_at=1)["usage"] is None
    done = build_response(req, response_id="resp_1", status="completed", created_at=1, completed_at=2)
    assert done["usage"] == usage()
    given = build_response(req, response_id="resp_1", status="completed", created_at=1, usage=usage(3, 4))
    assert given["usage"]["total_tokens"] == 7


def test_defaults() -> None:
    resp = build_response(_req(), response_id="resp_1", status="in_progress", created_at=1)
    assert resp["text"] == {"format": {"type": "text"}}
    assert resp["reasoning"] is None
    assert resp["tools"] == []
    assert resp["tool_choice"] == "auto"
    assert resp["top_p"] == 1.0 and resp["temperature"] == 1.0
    assert resp["presence_penalty"] == 0 and resp["frequency_penalty"] == 0
    assert resp["top_logprobs"] == 0
    assert resp["service_tier"] == "default"
    assert resp["truncation"] == "disabled"
    assert resp["parallel_tool_calls"] is True
    assert resp["store"] is True and resp["background"] is False
    assert resp["metadata"] == {}
    assert resp["model"] == ""
    assert "conversation" not in resp and "agent_reference" not in resp


def test_echoes_request() -> None:
    req = _req(
        model="gpt-x",
        instructions="be nice",
        metadata={"k": "v"},
        tools=[{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        tool_choice={"type": "function", "name": "get_weather"},
        temperature=0.5,
        top_p=0.9,
        presence_penalty=0.1,
        frequency_penalty=-0.1,
        top_logprobs=3,
        max_output_tokens=100,
        max_tool_calls=2,
        truncation="auto",
        parallel_tool_calls=False,
        text={"format": {"type": "json_object"}, "verbosity": "low"},
        reasoning={"effort": "low"},
        service_tier="flex",
        safety_identifier="s",
        prompt_cache_key="p",
        background=True,
        conversation="conv_1",
        agent_reference={"name": "agent-a", "version": "2"},
    )
    out = [items.message_item("msg_1", status="completed", text="hello")]
    resp = build_response(
        req, response_id="resp_1", status="completed", created_at=1, completed_at=2, output=out
    )
    validate_response(resp)
    assert resp["model"] == "gpt-x"
    assert resp["instructions"] == "be nice"
    assert resp["metadata"] == {"k": "v"}
    assert resp["tools"][0]["name"] == "get_weather"
    assert resp["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert (resp["temperature"], resp["top_p"], resp["top_logprobs"]) == (0.5, 0.9, 3)
    assert (resp["max_output_tokens"], resp["max_tool_calls"]) == (100, 2)
    assert resp["truncation"] == "auto" and resp["parallel_tool_calls"] is False
    assert resp["text"]["verbosity"] == "low"
    assert resp["reasoning"] == {"effort": "low", "summary": None}
    assert resp["service_tier"] == "flex"
    assert resp["background"] is True
    assert resp["conversation"] == {"id": "conv_1"}
    assert resp["agent_reference"] == {"type": "agent_reference", "name": "agent-a", "version": "2"}
    assert resp["output"] == out and resp["output"] is not out


def test_conversation_override_and_previous_response() -> None:
    req = _req(previous_response_id="resp_prev")
    resp = build_response(req, response_id="resp_1", status="queued", created_at=1, conversation_id="conv_9")
    validate_response(resp)
    assert resp["previous_response_id"] == "resp_prev"
    assert resp["conversation"] == {"id": "conv_9"}


def test_function_call_output_validates() -> None:
    out = [
        items.function_call_item(
            "fc_1", call_id="c1", name="request_info", arguments="{}", status="completed"
        )
    ]
    validate_response(
        build_response(_req(), response_id="resp_1", status="completed", created_at=1, output=out)
    )


def test_bad_status() -> None:
    with pytest.raises(ValueError):
        build_response(_req(), response_id="resp_1", status="done", created_at=1)


def test_usage() -> None:
    assert usage(2, 3) == {
        "input_tokens": 2,
        "output_tokens": 3,
        "total_tokens": 5,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def test_deleted_and_list() -> None:
    assert deleted_body("resp_1") == {"id": "resp_1", "object": "response", "deleted": True}
    assert list_body([], has_more=False) == {
        "object": "list",
        "data": [],
        "first_id": None,
        "last_id": None,
        "has_more": False,
    }
    page = list_body([{"id": "a"}, {"id": "b"}], has_more=True)
    assert (page["first_id"], page["last_id"], page["has_more"]) == ("a", "b", True)
