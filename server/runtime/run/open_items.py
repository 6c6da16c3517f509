"""Output items in the making: open on the stream, closed at a commit point, rebuilt after a crash.

Invariant: an item's id and `output_index` are the host's (see `mapping`); what a crash left open
is rebuilt from the events committed since the newest checkpoint only (one superstep at most).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...protocol import events as ev
from ...protocol import ids, items

MESSAGE = "message"
FUNCTION_CALL = "function_call"
FUNCTION_CALL_OUTPUT = "function_call_output"
REASONING = "reasoning"
APPROVAL = "mcp_approval_request"
MCP_CALL = "mcp_call"


@dataclass
class OpenItem:
    output_index: int
    item_id: str
    kind: str
    key: str
    text_parts: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    output: str = ""
    server_label: str = ""
    error: str | None = None
    approval_request_id: str | None = None
    # Text a crash left on the stream that the re-run's replayed model call (the journal) sends
    # again: not shown twice (see `mapping.ItemMapper`'s `resumed`).
    replay_pending: int = 0

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def add_text(self, text: str) -> None:
        self.text_parts.append(text)

    def add_arguments(self, chunk: str) -> None:
        self.arguments.append(chunk)

    def unseen(self, text: str) -> str:
        """The part of `text` the stream has not shown yet (a replayed model call continues
        this item): what a crash's stream showed already comes off `replay_pending`."""
        seen = min(self.replay_pending, len(text))
        self.replay_pending -= seen
        return text[seen:]

    def replayed(self) -> None:
        """The replay announced this item again: nothing of it is pending any more."""
        self.replay_pending = 0

    def final(self, status: str) -> dict[str, Any]:
        if self.kind == MESSAGE:
            return items.message_item(self.item_id, status=status, text=self.text)
        if self.kind == FUNCTION_CALL_OUTPUT:
            return items.function_call_output_item(
                self.item_id, call_id=self.call_id, output=self.output, status=status
            )
        if self.kind == REASONING:
            return items.reasoning_item(
                self.item_id, status=status, summary=self.text if self.text_parts else None
            )
        if self.kind == MCP_CALL:
            return items.mcp_call_item(
                self.item_id,
                name=self.name,
                arguments="".join(self.arguments),
                server_label=self.server_label,
                status="failed" if status == "completed" and self.error is not None else status,
                output=self.output,
                error=self.error,
                approval_request_id=self.approval_request_id,
            )
        if self.kind == APPROVAL:
            return items.mcp_approval_request_item(
                self.item_id,
                name=self.name,
                arguments="".join(self.arguments),
                server_label=self.server_label,
            )
        return items.function_call_item(
            self.item_id,
            call_id=self.call_id,
            name=self.name,
            arguments="".join(self.arguments),
            status=status,
        )


@dataclass
class ClosedItem:
    output_index: int
    item_id: str
    status: str
    included: bool
    item: dict[str, Any]


_KINDS = {MESSAGE, FUNCTION_CALL, FUNCTION_CALL_OUTPUT, REASONING, APPROVAL, MCP_CALL}


def request_message_id(request_id: str, n: int) -> str:
    """The id of the n-th message a request shows (see the module docstring)."""
    return ids.output_item_id(f"request:{request_id}", n, MESSAGE)


def message_item_id(response_id: str, message_id: str) -> str:
    """The id of the `message` item of a model's message that has an id (derived from it): the
    re-run of a recorded model call (the journal) continues the same item."""
    return ids.output_item_id(f"{response_id}:msg:{message_id}", 0, MESSAGE)


def message_key(message_id: str) -> str:
    """The mapper's key of the message item of a model's message that has an id."""
    return f"msg:id:{message_id}"


def ran_tool_item_id(response_id: str, call_id: str) -> str:
    """The id of the `mcp_call` item of a tool the server ran (derived from its call's id)."""
    return ids.output_item_id(f"{response_id}:tool:{call_id}", 0, MCP_CALL)


def announced(output: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The requests and tool runs stored output items already announced: request_info call ids,
    approval request ids, the ids of messages requests showed, of `mcp_call` items."""
    keys: set[str] = set()
    for item in output:
        if item.get("type") == FUNCTION_CALL:
            keys.add(str(item.get("call_id")))
        elif item.get("type") in (APPROVAL, MESSAGE, MCP_CALL):
            keys.add(str(item.get("id")))
    return frozenset(keys)


def reopen_from_events(
    response_id: str, rows: list[tuple[str, dict[str, Any]]]
) -> tuple[list[OpenItem], int]:
    """Rebuild the items a crash left open from the events committed since the last checkpoint.

    Returns the open items and the highest output index announced in those events (-1 if none).
    Recovery only reads the events after the newest checkpoint, so this is bounded by one superstep.
    """
    open_items: dict[int, OpenItem] = {}
    highest = -1
    for etype, data in rows:
        if etype == ev.OUTPUT_ITEM_ADDED:
            index = int(data["output_index"])
            highest = max(highest, index)
            item = data["item"]
            kind = item.get("type") if item.get("type") in _KINDS else FUNCTION_CALL
            approval = item.get("approval_request_id")
            open_items[index] = OpenItem(
                index,
                item["id"],
                kind,
                f"recovered:{index}",
                call_id=item.get("call_id", ""),
                name=item.get("name", ""),
                arguments=[item.get("arguments", "")] if kind in (APPROVAL, MCP_CALL) else [],
                output=item.get("output", "") if isinstance(item.get("output"), str) else "",
                server_label=item.get("server_label", ""),
                approval_request_id=approval if kind == MCP_CALL and isinstance(approval, str) else None,
            )
        elif etype in (ev.OUTPUT_TEXT_DELTA, ev.REASONING_SUMMARY_TEXT_DELTA):
            oi2 = open_items.get(int(data["output_index"]))
            if oi2 is not None:
                oi2.add_text(data.get("delta", ""))
        elif etype == ev.FUNCTION_CALL_ARGUMENTS_DELTA:
            oi3 = open_items.get(int(data["output_index"]))
            if oi3 is not None:
                oi3.add_arguments(data.get("delta", ""))
        elif etype == ev.OUTPUT_ITEM_DONE:
            open_items.pop(int(data["output_index"]), None)
    return sorted(open_items.values(), key=lambda i: i.output_index), highest


def closing_events(item: OpenItem, final: dict[str, Any], done: bool) -> list[dict[str, Any]]:
    """The events that close `item` as `final`: a completed item's content `done` events, then
    its `output_item.done` (an item closed otherwise gets only the latter)."""
    index = item.output_index
    closing: list[dict[str, Any]] = []
    if done and item.kind == MESSAGE:
        closing.append(ev.output_text_done(item.item_id, index, 0, item.text))
        closing.append(ev.content_part_done(item.item_id, index, 0, final["content"][0]))
    elif done and item.kind == FUNCTION_CALL:
        closing.append(
            ev.function_call_arguments_done(item.item_id, index, "".join(item.arguments), item.name)
        )
    elif done and item.kind == REASONING and item.text_parts:
        closing.append(ev.reasoning_summary_text_done(item.item_id, index, 0, item.text))
        closing.append(ev.reasoning_summary_part_done(item.item_id, index, 0, final["summary"][0]))
    closing.append(ev.output_item_done(index, final))
    return closing
