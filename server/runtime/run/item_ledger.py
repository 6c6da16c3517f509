"""The output items a response's stream has open: indexes handed out in order, and their closing.

Invariants (see `mapping` for which content becomes which item):
- `output_index` values count up from where the response stands and are never reused (also
  across recoveries: a recovered run starts after the highest index ever announced); an item's
  id derives from (response id, index) unless its kind names another (`open(item_id=...)`).
- Closing events are emitted only by `close_all()`, at a commit point.
- Items a crash left open that the re-run's replay continues (`resumed`) are open from the start;
  one the replay never reaches its end of closes `incomplete`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...protocol import events as ev
from ...protocol import ids
from .open_items import ClosedItem, OpenItem, closing_events

Emit = Callable[[dict[str, Any]], None]


class ItemLedger:
    def __init__(
        self,
        response_id: str,
        emit: Emit,
        *,
        next_output_index: int = 0,
        announced: frozenset[str] = frozenset(),
        resumed: Sequence[OpenItem] = (),
    ) -> None:
        self._response_id = response_id
        self._emit = emit
        self.next_output_index = next_output_index
        self._open: dict[str, OpenItem] = {}  # by the mapper's key
        self._shown: set[str] = set()  # ids of the items this stream opened (or resumed)
        # Requests (by call id or item id) and tool runs the response announced already (an
        # earlier life's, recovery; and this stream's requests as it announces them).
        self._announced = set(announced)
        for item in resumed:
            self._open[item.key] = item
            self._shown.add(item.item_id)

    @property
    def has_open(self) -> bool:
        return bool(self._open)

    def __contains__(self, key: str) -> bool:
        return key in self._open

    def get(self, key: str) -> OpenItem | None:
        return self._open.get(key)

    def shown(self, item_id: str) -> bool:
        """Whether this stream opened the item `item_id` already."""
        return item_id in self._shown

    def announced(self, key: str) -> bool:
        """Whether the response announced the request or tool run `key` already."""
        return key in self._announced

    def announce(self, key: str) -> None:
        self._announced.add(key)

    def next_index(self) -> int:
        index = self.next_output_index
        self.next_output_index += 1
        return index

    def open(
        self,
        kind: str,
        key: str,
        item: Callable[[str], dict[str, Any]],
        item_id: str | None = None,
        **fields: Any,
    ) -> OpenItem:
        """Open an item of `kind` at the next index (its `output_item.added`, `item(id)`), with
        the `OpenItem` fields it starts with (`call_id`, `name`...)."""
        index = self.next_index()
        item_id = item_id or ids.output_item_id(self._response_id, index, kind)
        self._shown.add(item_id)
        opened = OpenItem(index, item_id, kind, key, **fields)
        self._open[key] = opened
        self._emit(ev.output_item_added(index, item(item_id)))
        return opened

    def close_all(self, status: str = "completed") -> list[ClosedItem]:
        """Emit the closing events of every open item, in output order; return them."""
        closed: list[ClosedItem] = []
        done = status == "completed"
        for item in sorted(self._open.values(), key=lambda i: i.output_index):
            if item.replay_pending and done:
                # Resumed for a replay that never came (the call was made live instead): what
                # the stream showed of it is not a completed item.
                final = item.final("incomplete")
                self._emit(ev.output_item_done(item.output_index, final))
                closed.append(ClosedItem(item.output_index, item.item_id, "incomplete", False, final))
                continue
            final = item.final(status)
            for event in closing_events(item, final, done):
                self._emit(event)
            closed.append(ClosedItem(item.output_index, item.item_id, status, done, final))
        self._open.clear()
        return closed
