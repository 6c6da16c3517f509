"""The journal's agent-framework middleware: each model call and tool call of an executor goes
through the run's journal (`CURRENT_RUN`), recorded when it finishes or answered from a record.

- A model call is recorded when its stream ends (its updates, `codec.encode_stream`; the write
  is not waited for: it rides the outbox's next group commit, which a tool's intent, the next
  live events or the superstep's checkpoint wait for anyway).
- A tool call gets its intent before it runs and its result before the result goes back to the
  model (both waited for: the crash tests catch a tool that ran again under a new call id, or
  twice, without them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent_framework import (
    ChatContext,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    FunctionInvocationContext,
    FunctionMiddleware,
    ResponseStream,
)
from pydantic import BaseModel

from .codec import decode_result, decode_stream, dumps, encode_result, encode_stream
from .digest import model_digest, tool_digest
from .run import CURRENT_RUN, RERUN_MARK, TOOL_KEY, RunJournal, ToolInterrupted, idempotency_key

__all__ = ["JournalChatMiddleware", "JournalFunctionMiddleware"]


class JournalChatMiddleware(ChatMiddleware):
    """Records each model call of `executor` when its stream ends; replays a recorded one."""

    def __init__(self, executor: str) -> None:
        self.executor = executor

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        journal = CURRENT_RUN.get()
        if journal is None:
            await call_next()
            return
        executor = self.executor
        place = journal.next_model_place(executor)
        digest = model_digest(context.messages, context.options)
        row = journal.find(executor, place, digest)
        if row is not None and row.state == "done":
            journal.replayed()
            if context.stream:
                options = context.options or {}
                context.result = _replay_stream(decode_stream(row.data), options.get("response_format"))
            else:
                context.result = ChatResponse.from_dict(json.loads(row.data)["response"])
            return
        await call_next()
        _record_result(context, journal, executor, place, digest)


def _record_result(context: ChatContext, journal: RunJournal, executor: str, place: str, digest: str) -> None:
    """Record the model call's result: a stream when it ends (only a stream that ran to its end
    has a final response), a whole response at once."""
    result = context.result
    if isinstance(result, ResponseStream):
        seen: list[ChatResponseUpdate] = []

        def keep(update: ChatResponseUpdate) -> ChatResponseUpdate:
            seen.append(update)
            return update

        def ended(response: ChatResponse[Any]) -> None:
            # Written a loop turn later: the framework ends the call's span (its usage, which the
            # record's write carries: a replay reports none) right after its result hooks.
            data = encode_stream(seen)
            asyncio.get_running_loop().call_soon(_write_done, journal, executor, place, digest, data)

        context.stream_transform_hooks.append(keep)
        context.stream_result_hooks.append(ended)
    elif isinstance(result, ChatResponse):
        data = dumps({"response": result.to_dict()})
        journal.write(executor, place, "done", digest, data, wait=False)


def _write_done(journal: RunJournal, executor: str, place: str, digest: str, data: str) -> None:
    # A sink whose write failed refuses this one and keeps its failure: the run's next write
    # raises it (here, in a loop callback, nobody would see it).
    with contextlib.suppress(Exception):
        journal.write(executor, place, "done", digest, data, wait=False)


def _replay_stream(
    updates: list[ChatResponseUpdate], response_format: Any
) -> ResponseStream[ChatResponseUpdate, ChatResponse[Any]]:
    async def replay() -> Any:
        for update in updates:
            yield update

    return ResponseStream(
        replay(), finalizer=lambda ups: ChatResponse.from_updates(ups, output_format_type=response_format)
    )


def _arguments(context: FunctionInvocationContext) -> Any:
    args = context.arguments
    if isinstance(args, BaseModel):
        return args.model_dump(mode="json")
    return dict(args) if isinstance(args, Mapping) else args


class JournalFunctionMiddleware(FunctionMiddleware):
    """Records each tool call of `executor` (intent, then result); answers a recorded one."""

    def __init__(self, executor: str) -> None:
        self.executor = executor

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        journal = CURRENT_RUN.get()
        call_id = context.metadata.get("call_id")
        if journal is None or not isinstance(call_id, str) or not call_id:
            await call_next()
            return
        executor = self.executor
        name = context.function.name
        place = f"tool:{call_id}"
        digest = tool_digest(name, _arguments(context))
        row = journal.find(executor, place, digest)
        if row is not None and row.state == "done":
            journal.replayed()
            context.result = decode_result(row.data)
            return
        if row is not None:  # its intent only: the crash hit while it ran
            props = getattr(context.function, "additional_properties", None) or {}
            if props.get(RERUN_MARK) is False:
                raise ToolInterrupted(
                    f"The tool {name!r} (call {call_id}) was running when the server stopped, and it is "
                    "marked not safe to run again: whether it took effect is unknown. Check its effect, "
                    "then send the request again."
                )
            journal.rerun()
        else:
            intent = journal.write(executor, place, "intent", digest, "null", wait=True)
            if intent is not None:
                await intent
        token = TOOL_KEY.set(idempotency_key(journal.response_id, executor, call_id))
        try:
            await call_next()
        finally:
            TOOL_KEY.reset(token)
        done = journal.write(executor, place, "done", digest, encode_result(context.result), wait=True)
        if done is not None:
            await done
