"""`SqlCheckpointStorage`: agent-framework's CheckpointStorage in the host's own database.

Invariants:
- Rows are scoped by the host's key: the user, and a lineage (a response, or a conversation);
  a checkpoint of another user reads as missing.
- Order is the host's sequence (`checkpoints.seq`), never `iteration_count` or timestamps.
- `save()` goes through the run's commit hook, which commits the checkpoint in the same
  transaction as every event produced before it (the pairing). The framework swallows errors
  raised by `save()`, so the hook also marks the run failed: the host stops it itself.
- The hook may return before the checkpoint is committed (the run pipelines supersteps);
  every read first waits for the run's writes (`settle`), so a read never misses a checkpoint
  this run saved.
- Decoding enforces the framework's allow-list plus the app's registered types; a pause's
  checkpoint (it holds pending requests) is refused at `save()` unless it decodes, so the
  pausing turn fails instead of the answering one; any other checkpoint's refused types are
  logged as it is saved (`restorability`), the first time each is met.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable

from agent_framework import WorkflowCheckpoint
from agent_framework.exceptions import WorkflowCheckpointException

from ...store import Store
from ...store.records import CheckpointRow, Write
from .._af_private import CheckpointTypeRefused, decode_checkpoint, encode_checkpoint
from .restorability import check_restorable

SaveHook = Callable[[WorkflowCheckpoint, str], Awaitable[None]]
SettleHook = Callable[[], Awaitable[None]]


class SqlCheckpointStorage:
    def __init__(
        self,
        store: Store,
        *,
        user_id: str,
        lineage: str,
        response_id: str,
        allowed_types: Iterable[str] = (),
        on_save: SaveHook | None = None,
        settle: SettleHook | None = None,
        awaiting_input: bool = False,
        preloaded: tuple[str, str] | None = None,
    ) -> None:
        self._store = store
        self.user_id = user_id
        self.lineage = lineage
        self.response_id = response_id
        self._allowed = tuple(allowed_types)
        self._on_save = on_save
        self._settle = settle
        self.saved: list[str] = []
        self.failure: BaseException | None = None
        # True while a run that restored a checkpoint has not yet delivered its request's input
        # (`input_delivered`): what it saves meanwhile is marked, so recovery delivers it again.
        self.awaiting_input = awaiting_input
        # (checkpoint id, its stored data) read already (a continuation, recovery): a `load` of
        # it decodes it instead of reading it again (a stored checkpoint never changes). An
        # answer's run loads it twice: for its pending requests, then to restore it.
        self._preloaded = preloaded

    def input_delivered(self) -> None:
        """Called by the restore fix (`_af_private`) as the run starts delivering its input."""
        self.awaiting_input = False

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        try:
            data = encode_checkpoint(checkpoint)
            if checkpoint.pending_request_info_events:
                # A pause: its answer restores this checkpoint, so what it holds must come back
                # through the allow-list. Refused now, the pausing turn fails saying so, before
                # anyone acts on a request whose answer the host could not take.
                self._check_restorable(data)
            else:
                # Read back only by a recovery: a refused type is told now, the run goes on.
                check_restorable(data, self._allowed, self.response_id)
            if self._on_save is not None:
                await self._on_save(checkpoint, data)
            else:
                row = self.row(checkpoint, data, event_seq=-1)
                await self._store.write_now([Write(response_id=self.response_id, owner=None, checkpoint=row)])
        except Exception as exc:
            # The framework logs and ignores save errors; remember it so the run can stop.
            if self.failure is None:
                self.failure = exc
            raise
        self.saved.append(checkpoint.checkpoint_id)
        return checkpoint.checkpoint_id

    def _check_restorable(self, data: str) -> None:
        try:
            decode_checkpoint(data, allowed_types=self._allowed)
        except CheckpointTypeRefused as exc:
            raise CheckpointTypeRefused(
                exc.type_name,
                "the workflow paused on a request whose checkpoint holds it, so its answer could not "
                "be taken; the workflow's own declared types are admitted, this one is not declared",
            ) from exc

    async def _settled(self) -> None:
        if self._settle is not None:
            await self._settle()

    def row(self, checkpoint: WorkflowCheckpoint, data: str, *, event_seq: int) -> CheckpointRow:
        return CheckpointRow(
            checkpoint_id=checkpoint.checkpoint_id,
            user_id=self.user_id,
            lineage=self.lineage,
            response_id=self.response_id,
            workflow_name=checkpoint.workflow_name,
            event_seq=event_seq,
            data=data,
            created_at=time.time(),
            awaits_input=self.awaiting_input,
        )

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        await self._settled()
        preloaded = self._preloaded
        if preloaded is not None and preloaded[0] == checkpoint_id:
            return decode_checkpoint(preloaded[1], allowed_types=self._allowed)
        row = await self._store.load_checkpoint(checkpoint_id, self.user_id)
        if row is None:
            raise WorkflowCheckpointException(f"No checkpoint found with ID {checkpoint_id}")
        return decode_checkpoint(row.data, allowed_types=self._allowed)

    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        await self._settled()
        rows = await self._store.list_checkpoints(
            user_id=self.user_id, lineage=self.lineage, workflow_name=workflow_name
        )
        return [decode_checkpoint(r.data, allowed_types=self._allowed) for r in rows]

    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        await self._settled()
        rows = await self._store.list_checkpoints(
            user_id=self.user_id, lineage=self.lineage, workflow_name=workflow_name
        )
        return [r.checkpoint_id for r in rows]

    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        await self._settled()
        row = await self._store.latest_checkpoint(
            user_id=self.user_id, lineage=self.lineage, workflow_name=workflow_name
        )
        return None if row is None else decode_checkpoint(row.data, allowed_types=self._allowed)

    async def delete(self, checkpoint_id: str) -> bool:
        await self._settled()
        return await self._store.delete_checkpoint(checkpoint_id, self.user_id)
