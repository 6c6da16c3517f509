"""The kinds of request a paused workflow waits on, what each shows the client, and the
natural answer each takes.

- `TOOL_APPROVAL`: a tool that needs approval (agent-framework's function approval request).
  Shown as an `mcp_approval_request` item; answered with an `mcp_approval_response`.
- `USER_INPUT`: a handoff workflow waiting for the user (`HandoffAgentUserRequest`). The
  agent's reply was already streamed as its own message; nothing more is shown. Answered with
  the user's next message (an empty one: "go on", in the words the framework's autonomous mode
  uses).
- `AGENT_REVIEW`: `with_request_info()` holding an agent's reply for review
  (`AgentExecutorResponse`, answered with `AgentRequestInfoResponse`). The reply is shown as a
  message item (the agent's tokens are not streamed); a text answer becomes the human's message
  to that agent (it runs again), an empty one approves the reply ("go on").
- `PLAN_REVIEW`: Magentic's plan review (`MagenticPlanReviewRequest`). The plan is shown as a
  message item; a text answer revises it, an empty one approves it.
- `GENERIC`: an app's own `ctx.request_info(...)`: a `function_call` item named `request_info`
  whose arguments carry the request's data; answered with a `function_call_output`.

Invariant: the classification reads the request's data type only, so the same request is shown
and answered the same way by a first run, a continuation and recovery. The orchestrations
package is optional: without it, no request is of its kinds.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from agent_framework import AgentExecutorResponse, Content, Message

__all__ = ["GO_ON", "RequestKind", "classify", "natural_answer", "shown_texts"]

# What an empty answer tells a handoff agent (the framework's own autonomous-mode prompt).
GO_ON = "User did not respond. Continue assisting autonomously."


class RequestKind(StrEnum):
    TOOL_APPROVAL = "tool_approval"
    USER_INPUT = "user_input"
    AGENT_REVIEW = "agent_review"
    PLAN_REVIEW = "plan_review"
    GENERIC = "generic"

    @property
    def takes_message(self) -> bool:
        """Whether a plain user message answers it."""
        return self in (RequestKind.USER_INPUT, RequestKind.AGENT_REVIEW, RequestKind.PLAN_REVIEW)


def _orchestrations() -> Any:
    try:
        import agent_framework_orchestrations as orchestrations
    except ImportError:  # optional extra: no request can be of its kinds
        return None
    return orchestrations


def classify(data: Any) -> RequestKind:
    """The kind of a pending request, from its data."""
    if isinstance(data, Content):
        return RequestKind.TOOL_APPROVAL if data.type == "function_approval_request" else RequestKind.GENERIC
    if isinstance(data, AgentExecutorResponse):
        return RequestKind.AGENT_REVIEW
    orch = _orchestrations()
    if orch is not None:
        if isinstance(data, orch.HandoffAgentUserRequest):
            return RequestKind.USER_INPUT
        if isinstance(data, orch.MagenticPlanReviewRequest):
            return RequestKind.PLAN_REVIEW
    return RequestKind.GENERIC


def _message_texts(messages: Any) -> list[str]:
    texts: list[str] = []
    for message in messages or ():
        if isinstance(message, Message) and message.role == "assistant" and message.text:
            texts.append(message.text)
    return texts


def shown_texts(kind: RequestKind, data: Any) -> list[str]:
    """The texts a request of `kind` shows as message items (none for the other kinds)."""
    if kind == RequestKind.AGENT_REVIEW:
        return _message_texts(getattr(data.agent_response, "messages", None))
    if kind == RequestKind.PLAN_REVIEW:
        plan = getattr(data, "plan", None)
        text = plan.text if isinstance(plan, Message) else ""
        return [text] if text else []
    return []


def natural_answer(kind: RequestKind, text: str) -> Any:
    """The typed answer a plain user message `text` gives a request of `kind`."""
    orch = _orchestrations()
    if orch is None or not kind.takes_message:
        raise ValueError(f"a {kind} request is not answered with a message")
    text = text.strip()
    if kind == RequestKind.USER_INPUT:
        return orch.HandoffAgentUserRequest.create_response(text or GO_ON)
    if kind == RequestKind.AGENT_REVIEW:
        return (
            orch.AgentRequestInfoResponse.from_strings([text])
            if text
            else orch.AgentRequestInfoResponse.approve()
        )
    return orch.MagenticPlanReviewResponse.revise(text) if text else orch.MagenticPlanReviewResponse.approve()
