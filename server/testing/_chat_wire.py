"""Chat-completions wire format for a `Reply`: the JSON object and the SSE chunk sequence.

Streaming follows OpenAI: a role chunk, then one chunk per token (reasoning as `reasoning_content`,
then text as `content`, then each tool call: its id and name, then argument pieces), a chunk with
`finish_reason`, then, when `stream_options.include_usage` is set, a chunk with empty `choices`
and the usage; `data: [DONE]` ends the stream. Invariant: the chunks concatenate to the JSON reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._rules import Reply, Usage, tokens


def usage_json(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _finish_reason(reply: Reply) -> str:
    return "length" if reply.truncated else "tool_calls" if reply.calls else "stop"


def completion(
    reply: Reply, *, model: str, completion_id: str, created: int, call_ids: list[str]
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
        message["reasoning_details"] = [{"type": "reasoning.text", "text": reply.reasoning, "index": 0}]
    if reply.calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for cid, c in zip(call_ids, reply.calls, strict=True)
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(reply)}
        ],
        "usage": usage_json(reply.usage),
    }


def chunks(
    reply: Reply,
    *,
    model: str,
    completion_id: str,
    created: int,
    call_ids: list[str],
    include_usage: bool,
) -> Iterator[tuple[dict[str, Any], bool]]:
    """(chunk, is_token) pairs; the server sleeps the per-token delay after each token chunk."""
    extra: dict[str, Any] = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            **extra,
        }

    yield chunk({"role": "assistant", "content": "", "refusal": None}), False
    if reply.reasoning:
        # agent-framework reads `reasoning_details` (one chunk); `reasoning_content` streams the text.
        yield (
            chunk({"reasoning_details": [{"type": "reasoning.text", "text": reply.reasoning, "index": 0}]}),
            False,
        )
        for piece in tokens(reply.reasoning):
            yield chunk({"reasoning_content": piece}), True
    for piece in tokens(reply.text):
        yield chunk({"content": piece}), True
    for index, (cid, call) in enumerate(zip(call_ids, reply.calls, strict=True)):
        head = {
            "index": index,
            "id": cid,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]}), True
        for piece in tokens(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), True
    yield chunk({}, _finish_reason(reply)), False
    if include_usage:
        yield (
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [],
                "usage": usage_json(reply.usage),
            },
            False,
        )
