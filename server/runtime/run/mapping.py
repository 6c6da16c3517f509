"""Map an agent's update stream to Responses output items and events.

Invariants:
- Output item ids and `output_index` values are the host's (`item_ledger.ItemLedger`). The
  exceptions are the items a client answers by id: an `mcp_approval_request` carries the
  framework's approval request id, a `request_info` call its request id as `call_id`, so an
  answer reaches exactly the request it names; and a request shown as messages (a review) has
  ids derived from its request id, so recovery, which re-emits it, can tell it was shown. The
  agent's own message ids only group chunks into items; they are never sent.
- Opening events are emitted as updates arrive; closing events only by `close_all()`, which
  the run calls at a commit point (a checkpoint or the end of the run). So an item is closed
  `completed` only in the same transaction as the checkpoint that follows it, and a completed
  item is never taken back.
- A content streamed as deltas and then repeated whole (`merge_mode="replace"`, as the
  Responses client does for text, arguments and reasoning) is shown once.
- A tool the agent runs itself is one `mcp_call` item (name, arguments, output, or error), shown
  when its result arrives and closed at once (`output_item.added` then `output_item.done`), so a
  client sees call, result, then the text that follows, in the order they happened; the closed
  item goes to `on_closed` (the pairing commits its row with those events). With
  `server_tools="function_call"` it is instead its `function_call` item followed by its
  `function_call_output` item, both closed at the next commit point (the representation of the
  Foundry host). A tool declared by the request (the client runs it) is a `function_call` item
  alone; a tool that waits for approval is an `mcp_approval_request` item alone (its call is held
  back while it streams, and never shown: `request_items`); if the answer rejects it, it never
  runs and no `mcp_call` is shown for it (the framework's note to the model is its result).
- A turn that pauses (an approval request, or a call the client must answer, which
  agent-framework re-announces as `user_input_request`) may leave calls of the same model turn
  unrun: agent-framework holds the tools the server runs until the pause is answered. Such a call
  is not the client's, so it is never shown as a `function_call`: it stays unshown, and is shown
  (`mcp_call`, named from `answered_calls`, which the answering turn's plan fills from the
  paused state) when its result arrives.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_framework import AgentResponseUpdate, Content

from ...protocol import events as ev
from ...protocol import items
from ..pauses.approval_calls import AnsweredCall, PendingApproval
from ..pauses.pending import json_friendly
from ..pauses.request_items import RequestItems
from .item_ledger import Emit, ItemLedger
from .open_items import (
    FUNCTION_CALL,
    FUNCTION_CALL_OUTPUT,
    MCP_CALL,
    MESSAGE,
    REASONING,
    ClosedItem,
    OpenItem,
    message_item_id,
    message_key,
    ran_tool_item_id,
)
from .usage import StreamUsage

log = logging.getLogger("durable_responses.mapping")

# How a tool the server ran is shown (`RuntimeSettings.server_tools`).
SERVER_TOOLS_MCP = "mcp_call"
SERVER_TOOLS_FUNCTION = "function_call"


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(json_friendly(value), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class MapperSetup:
    """What a run's `ItemMapper` is built from: the response, where its events go, where its
    output stands (`next_output_index`, the requests it `announced`, the items a crash left
    open that a replay continues: `resumed`), and how tools are shown. The pairing builds the
    mapper from it (`Pairing`), telling it where an item closed early goes."""

    response_id: str
    emit: Emit
    next_output_index: int = 0
    announced: frozenset[str] = frozenset()
    server_label: str = "agent"
    answered_calls: Mapping[str, AnsweredCall] | None = None
    server_tools: str = SERVER_TOOLS_MCP
    resumed: Sequence[OpenItem] = ()
    usage: StreamUsage | None = None


class ItemMapper:
    def __init__(self, setup: MapperSetup, *, on_closed: Callable[[ClosedItem], None] | None = None) -> None:
        self._response_id = setup.response_id
        self._emit = setup.emit
        self._items = ItemLedger(
            setup.response_id,
            setup.emit,
            next_output_index=setup.next_output_index,
            announced=setup.announced,
            resumed=setup.resumed,
        )
        # Per author, the key of the message (or reasoning) item its text currently goes to:
        # the Responses client sends no message ids, and an author's text after a tool call, or
        # from another model response, is a new message.
        self._current: dict[str, str] = {}
        # Per author, the model response (`update.response_id`) its latest update came from: an
        # author's next model response is a new message too (an agent run again in the same
        # superstep, as handoff's autonomous mode does, says each reply as its own message).
        self._model_response: dict[str, str] = {}
        self._serial = 0
        # What the stream reports.
        self.usage = setup.usage if setup.usage is not None else StreamUsage()
        # The finish reason of the latest model reply that had one ("length": cut at the token
        # limit, so the response ends `incomplete`).
        self.finish_reason: str | None = None
        self._server_label = setup.server_label
        # Function calls being streamed, not yet shown (call id -> [name, argument chunks]): a
        # call is shown once the next content says what it is (a tool the server runs, or a
        # call the client runs); a call that turns into an approval request is never shown
        # (the `mcp_approval_request` stands for it).
        self._calls: dict[str, tuple[str, list[str]]] = {}
        # Once the turn pauses (`_paused`), the buffered calls that are not the client's
        # (`_client_calls`: re-announced as `user_input_request`) are the server's, held by the
        # framework until the pause is answered: kept here unshown, shown if their result comes.
        self._paused = False
        self._client_calls: set[str] = set()
        self._held: dict[str, tuple[str, list[str]]] = {}
        # Calls this turn's approval answers let run (call id -> name, arguments, approval
        # request id): the previous turn showed only their approval requests, so each is shown
        # with its result.
        self._answered_calls = dict(setup.answered_calls or {})
        self._mcp = setup.server_tools == SERVER_TOOLS_MCP
        # Call ids whose `mcp_call` item is shown (closed at once, so never open).
        self._ran: set[str] = set()
        # Told of every item closed before a commit point (an `mcp_call`), right after its
        # closing event: the pairing writes its row with that event.
        self._on_closed = on_closed
        self._alias: dict[str, str] = {}  # a message id's key -> the key its item has
        self._requests = RequestItems(
            self._items, setup.emit, server_label=setup.server_label, drop_call=self._drop_call
        )

    @property
    def approvals(self) -> list[PendingApproval]:
        """A plain agent's tool calls awaiting approval (kept with a completed end)."""
        return self._requests.approvals

    @property
    def next_output_index(self) -> int:
        """The index the next item opened gets."""
        return self._items.next_output_index

    @property
    def has_open(self) -> bool:
        return self._items.has_open

    def feed(self, update: AgentResponseUpdate) -> None:
        reason = update.finish_reason
        if reason is not None:
            self.finish_reason = str(getattr(reason, "value", reason))
        author = update.author_name or ""
        model_response = update.response_id
        if model_response:
            if self._model_response.get(author, model_response) != model_response:
                self._current.pop(author, None)
            self._model_response[author] = model_response
        for content in update.contents or ():
            self._content(update, author, content)

    # -- contents -------------------------------------------------------------------------

    def _content(self, update: AgentResponseUpdate, author: str, content: Content) -> None:
        kind = content.type
        replace = getattr(content, "merge_mode", None) == "replace"
        if kind == "function_result" and content.call_id in self._held:
            self._calls[content.call_id] = self._held.pop(content.call_id)  # it ran after all
        if self._calls and kind not in ("function_call", "function_approval_request", "usage"):
            if kind != "function_result":
                self._show_calls()
            elif not self._mcp:
                self._show_calls(until=content.call_id or "")
        if kind == "text":
            self._text(update, author, content.text or "", replace)
        elif kind == "text_reasoning":
            self._reasoning(author, content, replace)
        elif kind == "function_call":
            self._current.pop(author, None)
            if content.name == "request_info":
                self._requests.request_info(content)
            else:
                self._function_call(content, replace)
        elif kind == "function_result":
            self._current.pop(author, None)
            self._function_result(content)
        elif kind == "function_approval_request":
            self._current.pop(author, None)
            self._paused = True
            # Inside a workflow the update is the WorkflowAgent's; the request's event names the
            # executor (the agent) that asked.
            source = getattr(update.raw_representation, "source_executor_id", None)
            self._requests.approval(source if isinstance(source, str) and source else author, content)
        elif kind == "usage":
            details: Any = content.usage_details or {}
            self.usage.feed(author, details, replace=replace)
        else:
            log.debug("ignoring %s content in response %s", kind, self._response_id)

    def _drop_call(self, call_id: str) -> None:
        self._calls.pop(call_id, None)
        self._held.pop(call_id, None)

    def _fresh_key(self, prefix: str, author: str) -> str:
        self._serial += 1
        return f"{prefix}:{author}:#{self._serial}"

    def _text(self, update: AgentResponseUpdate, author: str, text: str, replace: bool) -> None:
        item_id = None
        if update.message_id:
            by_id = message_key(update.message_id)
            key = self._alias.get(by_id, by_id)
            if key not in self._items:
                derived = message_item_id(self._response_id, update.message_id)
                if self._items.announced(derived) or self._items.shown(derived):
                    # The same message shown again (a workflow that yields an earlier reply
                    # once more): a new item, as any other.
                    key = self._fresh_key("msg", author)
                else:
                    key, item_id = by_id, derived
                self._alias[by_id] = key
        else:
            current = self._current.get(author)
            key = (
                current
                if current is not None and current.startswith("msg:")
                else self._fresh_key("msg", author)
            )
        self._current[author] = key
        item = self._items.get(key)
        if item is None:
            item = self._items.open(
                MESSAGE, key, lambda i: items.message_item(i, status="in_progress"), item_id
            )
            self._emit(ev.content_part_added(item.item_id, item.output_index, 0, items.output_text_part("")))
        if replace and item.text_parts:
            return  # the whole text again, after its deltas
        if item.replay_pending and text:
            # A replayed model call continues an item a crash left open: what the stream showed
            # already is not shown again.
            text = item.unseen(text)
        if text:
            item.add_text(text)
            self._emit(ev.output_text_delta(item.item_id, item.output_index, 0, text))

    def _reasoning(self, author: str, content: Content, replace: bool) -> None:
        current = self._current.get(author)
        key = current if current is not None and current.startswith("rs:") else self._fresh_key("rs", author)
        self._current[author] = key
        item = self._items.get(key)
        if item is None:
            item = self._items.open(REASONING, key, lambda i: items.reasoning_item(i, status="in_progress"))
        text = content.text or ""
        if not text or (replace and item.text_parts):
            return
        if not item.text_parts:
            self._emit(
                ev.reasoning_summary_part_added(item.item_id, item.output_index, 0, items.summary_text_part())
            )
        item.add_text(text)
        self._emit(ev.reasoning_summary_text_delta(item.item_id, item.output_index, 0, text))

    def _function_call(self, content: Content, replace: bool) -> None:
        call_id = content.call_id or ""
        raw = content.arguments
        shown = self._items.get(f"fc:{call_id}")
        if shown is not None:
            # A re-announcement of a call already shown (a declaration-only tool's marker, or the
            # replay of a call a crash left open: it goes on as the same item).
            shown.replayed()
            return
        # A declaration-only tool's pause (`user_input_request`) re-announces the model's call
        # whole, after the call streamed: its arguments are not new, and the call is the client's.
        client = bool(getattr(content, "user_input_request", False))
        if client:
            self._paused = True
            self._client_calls.add(call_id)
        held = self._held.pop(call_id, None)
        name, chunks = held if held is not None else self._calls.get(call_id, ("", []))
        self._calls[call_id] = (name or content.name or "", chunks)
        whole = replace or client
        if raw is None or (whole and chunks):
            return  # nothing new, or the whole arguments again after their chunks
        chunks.append(raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":")))

    def _show_calls(self, until: str | None = None) -> None:
        """Show the buffered calls in order (all, or up to and including `until`); once the turn
        paused, a call that is not the client's is held instead (see `_held`)."""
        for call_id in list(self._calls):
            name, chunks = self._calls.pop(call_id)
            if call_id != until and self._paused and call_id not in self._client_calls:
                self._held[call_id] = (name, chunks)
                continue
            item = self._items.open(
                FUNCTION_CALL,
                f"fc:{call_id}",
                lambda i, c=call_id, n=name: items.function_call_item(  # type: ignore[misc]
                    i, call_id=c, name=n, arguments="", status="in_progress"
                ),
                call_id=call_id,
                name=name,
            )
            arguments = "".join(chunks)
            if arguments:
                item.add_arguments(arguments)
                self._emit(ev.function_call_arguments_delta(item.item_id, item.output_index, arguments))
            if call_id == until:
                return

    def _function_result(self, content: Content) -> None:
        call_id = content.call_id or ""
        if self._mcp and f"fc:{call_id}" not in self._items:
            self._ran_tool(call_id, content)
            return
        key = f"fco:{call_id}"
        if key in self._items:
            return
        answered = self._answered_calls.pop(call_id, None)
        if answered is not None and f"fc:{call_id}" not in self._items:
            self._calls[call_id] = (answered.name, [answered.arguments])
            self._show_calls()
        output = _text_of(content.result)
        if not output and content.exception is not None:
            output = f"Error: {content.exception}"
        self._items.open(
            FUNCTION_CALL_OUTPUT,
            key,
            lambda i: items.function_call_output_item(
                i, call_id=call_id, output=output, status="in_progress"
            ),
            call_id=call_id,
            output=output,
        )

    def _ran_tool(self, call_id: str, content: Content) -> None:
        """A tool the server ran: its `mcp_call` item, opened and closed at once."""
        # The item's id derives from the call's: a rerun that replays the same call (a journal)
        # shows it once; a rerun that calls the tool again shows that second run too.
        item_id = ran_tool_item_id(self._response_id, call_id)
        if call_id in self._ran or self._items.announced(item_id):
            self._calls.pop(call_id, None)
            return
        self._ran.add(call_id)
        buffered = self._calls.pop(call_id, None)
        answered = self._answered_calls.pop(call_id, None)
        if answered is not None and not answered.approved:
            # A rejected call never ran: no `mcp_call` (its result is the framework's note to
            # the model, whose reply says what it makes of it).
            return
        if buffered is not None:
            name, arguments = buffered[0], "".join(buffered[1])
        elif answered is not None:
            name, arguments = answered.name, answered.arguments
        else:
            name, arguments = "", ""
        output = _text_of(content.result)
        error = None if content.exception is None else f"Error: {content.exception}"
        index = self._items.next_index()
        item = OpenItem(
            index,
            item_id,
            MCP_CALL,
            f"mcp:{call_id}",
            call_id=call_id,
            name=name,
            arguments=[arguments or "{}"],
            output=output,
            server_label=self._server_label,
            error=error,
            approval_request_id=answered.request_id if answered is not None else None,
        )
        self._emit(ev.output_item_added(index, item.final("in_progress")))
        final = item.final("completed")
        self._emit(ev.output_item_done(index, final))
        if self._on_closed is not None:
            self._on_closed(ClosedItem(index, item.item_id, "completed", True, final))

    # -- closing --------------------------------------------------------------------------

    def close_all(self, status: str = "completed") -> list[ClosedItem]:
        """Emit the closing events of every open item; return them for `output_items`."""
        if self._calls:
            self._show_calls()
        self._current.clear()
        self._model_response.clear()
        return self._items.close_all(status)
