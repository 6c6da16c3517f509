"""Builders of the streaming events of a response, one function per event type.

Invariants:
- Every builder returns a new dict with every field the Open Responses `*StreamingEvent` schema
  requires except `sequence_number`, which only the sink assigns (it sets
  `event["sequence_number"]` when it takes the event), so numbering has one owner.
- Builders do not copy the items, parts and responses they are given (this is the hot path):
  an event is serialized the moment it is emitted, so the caller may change or reuse them
  afterwards, but not before.
"""

from __future__ import annotations

from typing import Any

RESPONSE_CREATED = "response.created"
RESPONSE_QUEUED = "response.queued"
RESPONSE_IN_PROGRESS = "response.in_progress"
RESPONSE_COMPLETED = "response.completed"
RESPONSE_FAILED = "response.failed"
RESPONSE_INCOMPLETE = "response.incomplete"
OUTPUT_ITEM_ADDED = "response.output_item.added"
OUTPUT_ITEM_DONE = "response.output_item.done"
CONTENT_PART_ADDED = "response.content_part.added"
CONTENT_PART_DONE = "response.content_part.done"
OUTPUT_TEXT_DELTA = "response.output_text.delta"
OUTPUT_TEXT_DONE = "response.output_text.done"
FUNCTION_CALL_ARGUMENTS_DELTA = "response.function_call_arguments.delta"
FUNCTION_CALL_ARGUMENTS_DONE = "response.function_call_arguments.done"
REASONING_SUMMARY_PART_ADDED = "response.reasoning_summary_part.added"
REASONING_SUMMARY_PART_DONE = "response.reasoning_summary_part.done"
REASONING_SUMMARY_TEXT_DELTA = "response.reasoning_summary_text.delta"
REASONING_SUMMARY_TEXT_DONE = "response.reasoning_summary_text.done"
ERROR = "error"

# A cancelled response ends with response.failed (status "cancelled"), so these three are all.
TERMINAL_EVENT_TYPES: frozenset[str] = frozenset({RESPONSE_COMPLETED, RESPONSE_FAILED, RESPONSE_INCOMPLETE})


def _lifecycle(event_type: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"type": event_type, "response": response}


def response_created(response: dict[str, Any]) -> dict[str, Any]:
    return _lifecycle(RESPONSE_CREATED, response)


def response_queued(response: dict[str, Any]) -> dict[str, Any]:
    return _lifecycle(RESPONSE_QUEUED, response)


def response_in_progress(response: dict[str, Any]) -> dict[str, Any]:
    return _lifecycle(RESPONSE_IN_PROGRESS, response)


def response_completed(response: dict[str, Any]) -> dict[str, Any]:
    return _lifecycle(RESPONSE_COMPLETED, response)


def response_failed(response: dict[str, Any]) -> dict[str, Any]:
    """Terminal event of a failed response, and of a cancelled one (status "cancelled", error null)."""
    return _lifecycle(RESPONSE_FAILED, response)


def response_incomplete(response: dict[str, Any]) -> dict[str, Any]:
    return _lifecycle(RESPONSE_INCOMPLETE, response)


def output_item_added(output_index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": OUTPUT_ITEM_ADDED, "output_index": output_index, "item": item}


def output_item_done(output_index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": OUTPUT_ITEM_DONE, "output_index": output_index, "item": item}


def _part_event(
    event_type: str, item_id: str, output_index: int, content_index: int, part: dict[str, Any]
) -> dict[str, Any]:
    return {
        "type": event_type,
        "item_id": item_id,
        "output_index": output_index,
        "content_index": content_index,
        "part": part,
    }


def content_part_added(
    item_id: str, output_index: int, content_index: int, part: dict[str, Any]
) -> dict[str, Any]:
    return _part_event(CONTENT_PART_ADDED, item_id, output_index, content_index, part)


def content_part_done(
    item_id: str, output_index: int, content_index: int, part: dict[str, Any]
) -> dict[str, Any]:
    return _part_event(CONTENT_PART_DONE, item_id, output_index, content_index, part)


def output_text_delta(item_id: str, output_index: int, content_index: int, delta: str) -> dict[str, Any]:
    # `logprobs` is optional in the schema but required by the openai SDK's event model.
    return {
        "type": OUTPUT_TEXT_DELTA,
        "item_id": item_id,
        "output_index": output_index,
        "content_index": content_index,
        "delta": delta,
        "logprobs": [],
    }


def output_text_done(item_id: str, output_index: int, content_index: int, text: str) -> dict[str, Any]:
    return {
        "type": OUTPUT_TEXT_DONE,
        "item_id": item_id,
        "output_index": output_index,
        "content_index": content_index,
        "text": text,
        "logprobs": [],
    }


def function_call_arguments_delta(item_id: str, output_index: int, delta: str) -> dict[str, Any]:
    return {
        "type": FUNCTION_CALL_ARGUMENTS_DELTA,
        "item_id": item_id,
        "output_index": output_index,
        "delta": delta,
    }


def function_call_arguments_done(
    item_id: str, output_index: int, arguments: str, name: str
) -> dict[str, Any]:
    # `name` is not in the schema's event but the openai SDK's event model carries it.
    return {
        "type": FUNCTION_CALL_ARGUMENTS_DONE,
        "item_id": item_id,
        "output_index": output_index,
        "arguments": arguments,
        "name": name,
    }


def _summary_event(event_type: str, item_id: str, output_index: int, summary_index: int) -> dict[str, Any]:
    return {
        "type": event_type,
        "item_id": item_id,
        "output_index": output_index,
        "summary_index": summary_index,
    }


def reasoning_summary_part_added(
    item_id: str, output_index: int, summary_index: int, part: dict[str, Any]
) -> dict[str, Any]:
    event = _summary_event(REASONING_SUMMARY_PART_ADDED, item_id, output_index, summary_index)
    event["part"] = part
    return event


def reasoning_summary_part_done(
    item_id: str, output_index: int, summary_index: int, part: dict[str, Any]
) -> dict[str, Any]:
    event = _summary_event(REASONING_SUMMARY_PART_DONE, item_id, output_index, summary_index)
    event["part"] = part
    return event


def reasoning_summary_text_delta(
    item_id: str, output_index: int, summary_index: int, delta: str
) -> dict[str, Any]:
    event = _summary_event(REASONING_SUMMARY_TEXT_DELTA, item_id, output_index, summary_index)
    event["delta"] = delta
    return event


def reasoning_summary_text_done(
    item_id: str, output_index: int, summary_index: int, text: str
) -> dict[str, Any]:
    event = _summary_event(REASONING_SUMMARY_TEXT_DONE, item_id, output_index, summary_index)
    event["text"] = text
    return event


def error_event(message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """A stream-level error.

    Carries the payload twice: nested under `error` (the Open Responses schema) and flat at the
    top level (the openai SDK's `ResponseErrorEvent`), so both kinds of client can read it.
    """
    return {
        "type": ERROR,
        "code": code,
        "message": message,
        "param": param,
        "error": {"type": "server_error", "code": code, "message": message, "param": param},
    }
