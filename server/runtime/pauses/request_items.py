"""How the requests an agent makes of a person are shown: tool approvals and `request_info`.

Invariants (part of `mapping`'s):
- An `mcp_approval_request` item's id is the framework's approval request id, and a
  `request_info` call's `call_id` its request id, so an answer reaches exactly the request it
  names; a request shown as messages (a review) has ids derived from its request id.
- A request is shown once per response: restoring a checkpoint re-emits every pending request,
  and one the response announced already (an earlier life's, `ItemLedger.announced`) is skipped.
- A tool call that waits for approval is never shown itself: the `mcp_approval_request` stands
  for it (`drop_call` forgets the call the mapper buffered).
"""

from __future__ import annotations

from collections.abc import Callable

from agent_framework import Content

from ...protocol import events as ev
from ...protocol import items
from ..run.item_ledger import Emit, ItemLedger
from ..run.open_items import APPROVAL, FUNCTION_CALL, MESSAGE, request_message_id
from .approval_calls import PendingApproval, arguments_json
from .pending import clean_request_info_arguments, request_info_data
from .requests import RequestKind, classify, shown_texts


class RequestItems:
    def __init__(
        self, ledger: ItemLedger, emit: Emit, *, server_label: str, drop_call: Callable[[str], None]
    ) -> None:
        self._items = ledger
        self._emit = emit
        self._server_label = server_label
        self._drop_call = drop_call
        # A plain agent's tool calls awaiting approval, in the order asked.
        self.approvals: list[PendingApproval] = []

    def approval(self, author: str, content: Content) -> None:
        """A tool call that waits for approval: its `mcp_approval_request` item (`author`: the
        agent that asked, shown as the item's `server_label`)."""
        request_id = content.id or ""
        call = content.function_call
        if call is not None:
            self._drop_call(call.call_id or "")  # the approval request stands for the call
        if self._items.announced(request_id):
            return
        self._items.announce(request_id)
        name = (call.name if call is not None else None) or ""
        arguments = arguments_json(call.arguments if call is not None else None)
        label = author or self._server_label
        self._items.open(
            APPROVAL,
            f"mcpr:{request_id}",
            lambda i: items.mcp_approval_request_item(i, name=name, arguments=arguments, server_label=label),
            item_id=request_id,
            name=name,
            server_label=label,
            arguments=[arguments],
        )
        self.approvals.append(PendingApproval(request_id, content.to_dict()))

    def request_info(self, content: Content) -> None:
        """A workflow's `request_info`: shown by its kind (see `requests`)."""
        call_id, name, arguments = clean_request_info_arguments(content)
        if self._items.announced(call_id):
            return
        self._items.announce(call_id)
        data = request_info_data(content)
        kind = classify(data)
        if kind == RequestKind.TOOL_APPROVAL:
            # (The framework passes approvals through as themselves; kept for completeness.)
            self.approval("", data)
            return
        if kind.takes_message:
            for n, text in enumerate(shown_texts(kind, data)):
                item_id = request_message_id(call_id, n)
                if not self._items.announced(item_id):
                    self._message(text, f"req:{call_id}:{n}", item_id)
            return
        item = self._items.open(
            FUNCTION_CALL,
            f"fc:{call_id}",
            lambda i: items.function_call_item(
                i, call_id=call_id, name=name, arguments="", status="in_progress"
            ),
            call_id=call_id,
            name=name,
            arguments=[arguments],
        )
        self._emit(ev.function_call_arguments_delta(item.item_id, item.output_index, arguments))

    def _message(self, text: str, key: str, item_id: str) -> None:
        """A whole message at once (a request's content shown to the client)."""
        item = self._items.open(MESSAGE, key, lambda i: items.message_item(i, status="in_progress"), item_id)
        self._emit(ev.content_part_added(item.item_id, item.output_index, 0, items.output_text_part("")))
        item.add_text(text)
        self._emit(ev.output_text_delta(item.item_id, item.output_index, 0, text))
