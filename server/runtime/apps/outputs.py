"""What a workflow's output value shows: text for values the framework would show as a repr.

agent-framework's ``WorkflowAgent`` turns an output that is not text, a message or an agent
response into ``str(value)`` (a dataclass's repr, ``True``). The host shows such a value as JSON
instead (numbers and booleans as JSON scalars, dataclasses, pydantic models and TypedDicts as
objects, lists, a list of strings too, as arrays), so a client can read it and ask for it as
structured output.

Invariant: a pure function of the value, so a rerun superstep shows the same text.
"""

from __future__ import annotations

import json
from typing import Any

from agent_framework import AgentResponse, AgentResponseUpdate, Content, Message

from ..pauses.pending import json_friendly

__all__ = ["output_value"]

_SHOWN_AS_IS = (str, Content, Message, AgentResponse, AgentResponseUpdate)


def output_value(data: Any) -> Any:
    """``data`` if the framework shows it as it is, else its JSON text."""
    if data is None or isinstance(data, _SHOWN_AS_IS):
        return data
    # A list of contents or messages (an orchestration's conversation) is shown as they are; a
    # list of strings is a value like any other (the framework would join its texts into one).
    if isinstance(data, list) and data and all(isinstance(x, (Content, Message)) for x in data):
        return data
    return json.dumps(json_friendly(data), ensure_ascii=False)
