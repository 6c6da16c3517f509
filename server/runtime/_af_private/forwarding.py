"""What an agent inside a workflow streams, forwarded with every content on every supported release.

agent-framework-core 1.23.0's ``WorkflowAgent._convert_workflow_event_to_agent_response_updates``
forwards an agent's reply as it is; 1.26.0 drops what holds a function call or an approval
response, and tool results. ``restore._RestoreForwardingMixin`` overrides that method with
``forwarded`` (private name: ``agent_framework._types._copy_operation_state``).
"""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from typing import Any

from agent_framework import AgentResponse, AgentResponseUpdate, Message, WorkflowEvent

# Copies a response's background-operation state onto an update (both releases' forwarding does).
from agent_framework._types import _copy_operation_state

__all__ = ["forwarded"]


def _now() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def forwarded(response_id: str, event: WorkflowEvent[Any]) -> list[AgentResponseUpdate] | None:
    """The updates for an output of an agent's reply (an update, a response, a message or a list
    of them), every content and role kept, or None for any other event.

    agent-framework-core 1.23.0's ``WorkflowAgent`` forwards these as they are; 1.26.0 drops a
    message or update that holds a function call or an approval response, and every message
    that is not the assistant's (tool results), and adds the response's usage as a content.
    The host shows the tools an agent inside a workflow runs (a call and its result make one
    item, `mapping`) and counts usage from the model calls themselves (`usage`), so it takes
    the 1.23.0 forwarding on every supported release.
    """
    if event.type not in ("output", "intermediate", "data"):
        return None
    data, executor_id = event.data, event.executor_id
    if isinstance(data, AgentResponseUpdate):
        update = copy.copy(data)  # a fresh update: the executor still holds `data`
        update.contents = list(data.contents)
        update.author_name = data.author_name or executor_id
        if data.additional_properties is not None:
            update.additional_properties = dict(data.additional_properties)
        return [update]
    if isinstance(data, AgentResponse):
        updates = [
            AgentResponseUpdate(
                contents=list(msg.contents),
                role=msg.role,
                author_name=msg.author_name or executor_id,
                response_id=data.response_id or response_id,
                message_id=msg.message_id or str(uuid.uuid4()),
                created_at=data.created_at or _now(),
                raw_representation=msg,
            )
            for msg in data.messages
        ]
        if updates:
            last = updates[-1]
            last.agent_id = data.agent_id
            last.finish_reason = data.finish_reason
            last.continuation_token = data.continuation_token
            _copy_operation_state(data, last)
            last.additional_properties = dict(data.additional_properties)
        return updates
    messages: list[Message]
    if isinstance(data, Message):
        messages, own_ids = [data], False
    elif isinstance(data, list) and data and all(isinstance(m, Message) for m in data):
        messages, own_ids = data, True
    else:
        return None
    return [
        AgentResponseUpdate(
            contents=list(msg.contents),
            role=msg.role,
            author_name=msg.author_name or executor_id,
            response_id=response_id,
            message_id=(msg.message_id if own_ids else None) or str(uuid.uuid4()),
            created_at=_now(),
            raw_representation=msg,
        )
        for msg in messages
    ]
