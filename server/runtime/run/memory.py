"""`store=false` responses: their own sink and checkpoint storage, neither of which writes.

Invariants:
- Nothing of a `store=false` response is ever written to the database; its events live as long
  as its stream (`MemorySink`), its checkpoints in memory (`MemoryCheckpointStorage`).
- Items are still closed `completed` at each checkpoint and at the end, exactly as a stored run
  closes them, so a client sees the same event sequence either way.
- A `store=false` turn may continue a stored workflow: a checkpoint not found in memory is read
  (never written) from the database.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agent_framework import InMemoryCheckpointStorage, WorkflowCheckpoint

from ...protocol import events as ev
from ...protocol.sse import dumps
from ...store import CheckpointRow, EventRow, Finish, PendingRequestRow
from .mapping import MapperSetup
from .open_items import ClosedItem
from .pairing import Pairing
from .sinks import Sink


class MemorySink(Sink):
    """`store=false`: events live only as long as the response's stream (nothing is written)."""

    paced = True

    def __init__(self, start_seq: int = 0) -> None:
        self.seq = start_seq
        self.events: list[EventRow] = []
        self.closed_items: list[ClosedItem] = []
        self.changed = asyncio.Event()
        self.failure = None
        self.done = False

    def emit(self, event: dict[str, Any]) -> None:
        event["sequence_number"] = self.seq
        self.events.append(EventRow(self.seq, event["type"], dumps(event)))
        self.seq += 1
        if event["type"] in ev.TERMINAL_EVENT_TYPES:
            self.done = True
        self.changed.set()

    def send(
        self,
        closed: Sequence[ClosedItem] = (),
        *,
        checkpoint: CheckpointRow | None = None,
        pending: Sequence[PendingRequestRow] = (),
        status: str | None = None,
        finish: Finish | None = None,
        prune: tuple[str, str | None] | None = None,
        urgent: bool = False,
        waiting: Sequence[Mapping[str, Any]] = (),
    ) -> asyncio.Future[None]:
        self.closed_items.extend(closed)
        self.changed.set()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def settle(self) -> None:
        """Nothing to commit: give the stream a loop turn to send what it holds. (Awaiting
        `commit()`'s future, done at once, would not suspend: after a 1000-output superstep
        its last outputs then waited behind the framework's ~40 ms of end-of-stream work.)"""
        await asyncio.sleep(0)

    def terminal_response(self) -> dict[str, Any] | None:
        """The Response of the terminal event, once there is one."""
        for e in reversed(self.events):
            if e.type in ev.TERMINAL_EVENT_TYPES:
                data: dict[str, Any] = json.loads(e.data)["response"]
                return data
        return None


Loader = Callable[[str], Awaitable[WorkflowCheckpoint]]


class MemoryCheckpointStorage(InMemoryCheckpointStorage):
    """Checkpoints in memory; every save closes the items open at that point (`on_save`).

    `fallback` loads a checkpoint this storage does not hold (a stored workflow continued by a
    `store=false` turn): read only.
    """

    def __init__(self, on_save: Callable[[], Awaitable[None]], fallback: Loader | None = None) -> None:
        super().__init__()
        self._on_save = on_save
        self._fallback = fallback
        self.failure: BaseException | None = None

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        try:
            return await super().load(checkpoint_id)
        except Exception:
            if self._fallback is None:
                raise
            return await self._fallback(checkpoint_id)

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        cid = await super().save(checkpoint)
        await self._on_save()
        return cid


class MemoryPairing(Pairing):
    """The pairing of a `store=false` run: each checkpoint closes the items open before it."""

    def __init__(self, mapping: MapperSetup, sink: MemorySink, fallback: Loader | None = None) -> None:
        super().__init__(mapping)
        self._sink = sink
        self._storage = MemoryCheckpointStorage(self._on_save, fallback)

    @property
    def storage(self) -> MemoryCheckpointStorage:
        return self._storage

    def check(self) -> None:
        return None  # nothing is encoded or written: a save cannot fail

    async def _on_save(self) -> None:
        await self._sink.commit(self.close_open("completed"))
