"""Echo: the default app, a one-executor workflow that streams the user's last message back.

The reply is streamed word by word as ``AgentResponseUpdate`` chunks that share ONE ``message_id``
("hello big world" -> "hello", " big", " world"), so a host maps them to one output message with several
text deltas. Invariant: the chunks concatenate to exactly the (stripped) user text, or "(empty)".
"""

from __future__ import annotations

import re
import uuid
from typing import Never

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    Content,
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)

EMPTY_REPLY = "(empty)"

# A chunk is a word with the whitespace that precedes it, so chunks join back to the original text.
_CHUNK_RE = re.compile(r"\s*\S+")


def reply_chunks(text: str) -> list[str]:
    """The chunks the echo streams for ``text``: its words, each with its leading whitespace."""
    chunks = _CHUNK_RE.findall(text.strip())
    return chunks or [EMPTY_REPLY]


def _last_user_text(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return message.text or ""
    return ""


class EchoExecutor(Executor):
    """Streams the last user message back as one message in several updates."""

    def __init__(self) -> None:
        super().__init__(id="echo")

    @handler
    async def echo(
        self, messages: list[Message], ctx: WorkflowContext[Never, AgentResponseUpdate | AgentResponse]
    ) -> None:
        chunks = reply_chunks(_last_user_text(messages))
        message_id = f"msg_{uuid.uuid4().hex}"
        if not ctx.is_streaming():
            # WorkflowAgent refuses AgentResponseUpdate outputs in non-streaming runs.
            reply = Message(role="assistant", contents=["".join(chunks)], message_id=message_id)
            await ctx.yield_output(AgentResponse(messages=[reply]))
            return
        for chunk in chunks:
            await ctx.yield_output(
                AgentResponseUpdate(
                    contents=[Content.from_text(chunk)],
                    role="assistant",
                    author_name="echo",
                    message_id=message_id,
                )
            )


def echo() -> Workflow:
    """A fresh echo workflow (the host builds one per run)."""
    return WorkflowBuilder(name="echo", start_executor=EchoExecutor()).build()
