"""The interface the outbox commits through: one writer per dialect (`_pg_writer.PgWriter`,
`_sqlite_writer.SqliteWriter`).

Job: `Writer.commit(writes)` commits a batch in one transaction, as its dialect's renderer
makes its statements from the batch's one intermediate form (`_batch.Batch`). The outbox
decides the batches, fails and retries writes, and keeps the books (`OutboxStats`); a writer
only commits.

Invariants every writer keeps (the conformance suite runs both on both dialects):
- A batch commits whole or not at all, except for lease fencing: a write whose
  (response, owner) fence does not match commits nothing, its neighbours commit, and `commit`
  returns those pairs.
- Writes commit in the order given; a writer never reorders or splits a batch.
- `pg_notify` (PostgreSQL) is sent inside the committing transaction, once `notify_replicas`
  has been called.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import ClassVar

from ..records import Write

__all__ = ["Fenced", "WriteKind", "Writer"]

Fenced = set[tuple[str, str]]
"""(response id, owner) pairs whose lease fence did not match: those writes committed nothing."""


class WriteKind(StrEnum):
    """What a write does, for the books (`OutboxStats`, /metrics): every kind takes the same path.

    CREATE: it inserts its response. END: it ends its response. SUPERSTEP: any other write of a
    run (events, items, a checkpoint, pending requests, journal records). A commit's kind is
    its writes' one kind, or MIXED."""

    CREATE = "create"
    SUPERSTEP = "superstep"
    END = "end"
    MIXED = "mixed"

    @classmethod
    def of(cls, w: Write) -> WriteKind:
        if w.create is not None:
            return cls.CREATE
        return cls.END if w.finish is not None else cls.SUPERSTEP

    @classmethod
    def of_commit(cls, kinds: Iterable[WriteKind]) -> WriteKind:
        distinct = set(kinds)
        return distinct.pop() if len(distinct) == 1 else cls.MIXED


class Writer(ABC):
    """One dialect's commits."""

    @abstractmethod
    async def commit(self, writes: Sequence[Write], *, whole: bool = False) -> Fenced:
        """Commit `writes` in one transaction; return the pairs fenced off. `whole`: a write
        fenced off raises `LeaseLost` and the transaction commits nothing."""

    # Whether `committed` reads back on the writer's own connection; else the outbox reads
    # through the store's reader (`_in_doubt.committed_anyway`).
    reads_back: ClassVar[bool] = False

    async def committed(self, writes: Sequence[Write]) -> list[Write] | None:
        """After a group's commit failed on the connection: its writes whose rows are durable
        anyway; None when that cannot be told (`_in_doubt`). Only where `reads_back`."""
        raise NotImplementedError

    def notify_replicas(self, channel: str, prefix: str) -> None:  # noqa: B027 - optional hook
        """Tell other replicas what each transaction committed (`pg_notify(channel, prefix || id)`)."""

    @abstractmethod
    async def close(self) -> None:
        """Close the writer's own connection(s)."""
