"""Map an agent's update stream to Responses output items and events.

Invariants:
- Output item ids and `output_index` values are the host's: indexes count up from where the
  response stands (never reused, also across recoveries), ids derive from (response id, index).
  The agent's own message ids only group chunks into items; they are never sent.
- Opening events (`output_item.added`, `content_part.added`, deltas) are emitted as updates
  arrive; closing events are emitted only by `close_all()`, which the run calls at a commit
  point (a checkpoint or the end of the run). So an item is closed `completed` only in the same
  transaction as the checkpoint that follows it, and a completed item is never taken back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_framework import AgentResponseUpdate, Content

from ..protocol import events as ev
from ..protocol import ids, items
from ._af_private import clean_request_info_arguments

log = logging.getLogger("durable_responses.mapping")

Emit = Callable[[dict[str, Any]], None]


@dataclass
class OpenItem:
    output_index: int
    item_id: str
    kind: str  # "message" | "function_call"
    key: str
    text_parts: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def final(self, status: str) -> dict[str, Any]:
        if self.kind == "message":
            return items.message_item(self.item_id, status=status, text="".join(self.text_parts))
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


class ItemMapper:
    def __init__(
        self,
        response_id: str,
        emit: Emit,
        *,
        next_output_index: int = 0,
        announced_calls: frozenset[str] = frozenset(),
    ) -> None:
        self._response_id = response_id
        self._emit = emit
        self.next_output_index = next_output_index
        self._open: dict[str, OpenItem] = {}
        self._current_text_key: str | None = None
        self.usage_in = 0
        self.usage_out = 0
        # request_info calls this response already announced (recovery): restoring a checkpoint
        # re-emits every pending request, which must not become a second item for the same call.
        self._announced = announced_calls

    @property
    def has_open(self) -> bool:
        return bool(self._open)

    def feed(self, update: AgentResponseUpdate) -> None:
        for content in update.contents or ():
            self._content(update, content)

    def _content(self, update: AgentResponseUpdate, content: Content) -> None:
        kind = content.type
        if kind == "text":
            text = content.text or ""
            key = f"msg:{update.message_id or ''}"
            item = self._open.get(key)
            if item is None:
                item = self._open_message(key)
            if text:
                item.text_parts.append(text)
                self._emit(ev.output_text_delta(item.item_id, item.output_index, 0, text))
        elif kind == "function_call":
            self._function_call(content)
        elif kind == "usage":
            details: Any = content.usage_details or {}
            self.usage_in += int(details.get("input_token_count") or 0)
            self.usage_out += int(details.get("output_token_count") or 0)
        else:
            # function results, reasoning, data: internal to the agent; not part of the output.
            log.debug("ignoring %s content in response %s", kind, self._response_id)

    def _open_message(self, key: str) -> OpenItem:
        index = self._next_index()
        item = OpenItem(index, ids.output_item_id(self._response_id, index, "message"), "message", key)
        self._open[key] = item
        self._emit(ev.output_item_added(index, items.message_item(item.item_id, status="in_progress")))
        self._emit(ev.content_part_added(item.item_id, index, 0, items.output_text_part("")))
        return item

    def _function_call(self, content: Content) -> None:
        if content.name == "request_info":
            call_id, name, arguments = clean_request_info_arguments(content)
            if call_id in self._announced:
                return
        else:
            call_id = content.call_id or ""
            name = content.name or ""
            raw = content.arguments
            if raw is None:
                # A re-announcement of a call already streamed (e.g. the tool-invocation layer's
                # pause marker for a declaration-only tool): nothing new to add.
                if f"fc:{call_id}" in self._open:
                    return
                arguments = ""
            else:
                arguments = raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"))
        key = f"fc:{call_id}"
        item = self._open.get(key)
        if item is None:
            index = self._next_index()
            item = OpenItem(
                index, ids.output_item_id(self._response_id, index, "function_call"), "function_call", key
            )
            item.call_id, item.name = call_id, name
            self._open[key] = item
            self._emit(
                ev.output_item_added(
                    index,
                    items.function_call_item(
                        item.item_id, call_id=call_id, name=name, arguments="", status="in_progress"
                    ),
                )
            )
        elif name and not item.name:
            item.name = name
        if arguments:
            item.arguments.append(arguments)
            self._emit(ev.function_call_arguments_delta(item.item_id, item.output_index, arguments))

    def _next_index(self) -> int:
        index = self.next_output_index
        self.next_output_index += 1
        return index

    def close_all(self, status: str = "completed") -> list[ClosedItem]:
        """Emit the closing events of every open item; return them for `output_items`."""
        closed: list[ClosedItem] = []
        for item in sorted(self._open.values(), key=lambda i: i.output_index):
            final = item.final(status)
            if item.kind == "message" and status == "completed":
                text = "".join(item.text_parts)
                self._emit(ev.output_text_done(item.item_id, item.output_index, 0, text))
                self._emit(ev.content_part_done(item.item_id, item.output_index, 0, final["content"][0]))
            elif item.kind == "function_call" and status == "completed":
                self._emit(
                    ev.function_call_arguments_done(
                        item.item_id, item.output_index, "".join(item.arguments), item.name
                    )
                )
            self._emit(ev.output_item_done(item.output_index, final))
            closed.append(ClosedItem(item.output_index, item.item_id, status, status == "completed", final))
        self._open.clear()
        return closed


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
            kind = "message" if item.get("type") == "message" else "function_call"
            oi = OpenItem(index, item["id"], kind, f"recovered:{index}")
            if kind == "function_call":
                oi.call_id, oi.name = item.get("call_id", ""), item.get("name", "")
            open_items[index] = oi
        elif etype == ev.OUTPUT_TEXT_DELTA:
            oi2 = open_items.get(int(data["output_index"]))
            if oi2 is not None:
                oi2.text_parts.append(data.get("delta", ""))
        elif etype == ev.FUNCTION_CALL_ARGUMENTS_DELTA:
            oi3 = open_items.get(int(data["output_index"]))
            if oi3 is not None:
                oi3.arguments.append(data.get("delta", ""))
        elif etype == ev.OUTPUT_ITEM_DONE:
            open_items.pop(int(data["output_index"]), None)
    return sorted(open_items.values(), key=lambda i: i.output_index), highest
