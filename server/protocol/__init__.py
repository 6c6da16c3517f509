"""The Responses wire format: request parsing and validation, the Response object, events, errors.

Invariant: this package is pure (no I/O, no asyncio, no agent_framework, stdlib only), so every
other layer can rely on it from any context and it can be tested against the Open Responses schema
alone.
"""

from __future__ import annotations

from . import events
from .errors import (
    ProtocolError,
    bad_request,
    conflict,
    error_body,
    not_found,
    payload_too_large,
    rate_limited,
    server_error,
    unauthorized,
    unavailable,
    unprocessable,
)
from .events import (
    TERMINAL_EVENT_TYPES,
    content_part_added,
    content_part_done,
    error_event,
    function_call_arguments_delta,
    function_call_arguments_done,
    output_item_added,
    output_item_done,
    output_text_delta,
    output_text_done,
    response_completed,
    response_created,
    response_failed,
    response_in_progress,
    response_incomplete,
    response_queued,
)
from .ids import (
    input_item_id,
    is_valid_conversation_id,
    is_valid_response_id,
    is_valid_user_id,
    new_response_id,
    output_item_id,
)
from .items import function_call_item, message_item, output_text_part
from .request import (
    KNOWN_PARAMETERS,
    CreateRequest,
    ListParams,
    StreamParams,
    parse_create_request,
    parse_list_params,
    parse_stream_params,
)
from .response import build_response, deleted_body, list_body, usage
from .sse import comment, dumps, frame

__all__ = [
    "KNOWN_PARAMETERS",
    "TERMINAL_EVENT_TYPES",
    "CreateRequest",
    "ListParams",
    "ProtocolError",
    "StreamParams",
    "bad_request",
    "build_response",
    "comment",
    "conflict",
    "content_part_added",
    "content_part_done",
    "deleted_body",
    "dumps",
    "error_body",
    "error_event",
    "events",
    "frame",
    "function_call_arguments_delta",
    "function_call_arguments_done",
    "function_call_item",
    "input_item_id",
    "is_valid_conversation_id",
    "is_valid_response_id",
    "is_valid_user_id",
    "list_body",
    "message_item",
    "new_response_id",
    "not_found",
    "output_item_added",
    "output_item_done",
    "output_item_id",
    "output_text_delta",
    "output_text_done",
    "output_text_part",
    "parse_create_request",
    "parse_list_params",
    "parse_stream_params",
    "payload_too_large",
    "rate_limited",
    "response_completed",
    "response_created",
    "response_failed",
    "response_in_progress",
    "response_incomplete",
    "response_queued",
    "server_error",
    "unauthorized",
    "unavailable",
    "unprocessable",
    "usage",
]
