"""The interface the outbox commits through: one writer per dialect (`_pg_writer.PgWriter`,
`_sqlite_writer.SqliteWriter`).

Job: `Writer.commit(kind, writes)` commits one group of a batch (`WriteKind`) in one
transaction. The outbox decides the groups and their order, fails and retries writes, and
keeps the books (`OutboxStats`); a writer only commits.

Invariants every writer keeps (the conformance suite runs both on both dialects):
- A group commits whole or not at all, except for lease fencing on a fast path: a write whose
  (response, owner) fence does not match commits nothing, its neighbours commit, and `commit`
  returns those pairs. On the GENERAL path a fence that does not match raises `LeaseLost` and
  the group commits nothing.
- Writes commit in the order given; a writer never reorders or splits a group.
- `pg_notify` (PostgreSQL) is sent inside the committing transaction, once `notify_replicas`
  has been called.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar

from .records import Write

__all__ = ["Fenced", "WriteKind", "Writer"]

Fenced = set[tuple[str, str]]
"""(response id, owner) pairs whose lease fence did not match: those writes committed nothing."""


class WriteKind(StrEnum):
    """The groups a batch splits into (`_plan.kind_of`), committed in this order.

    CREATE: plain creations (`_plan.is_plain_creation`), all or none. SUPERSTEP: the writes of
    every superstep (`_plan.qualifies`). END: plain ends (`_plan.is_plain_end`). GENERAL:
    anything, as `_plan.plan` plans it (pending requests, a response whose earlier write in the
    batch was GENERAL, and every kind the dialect has no fast path for).
    """

    CREATE = "create"
    SUPERSTEP = "superstep"
    GENERAL = "general"
    END = "end"


class Writer(ABC):
    """One dialect's commits."""

    # The kinds this dialect has a fast path for; the outbox sends the others to GENERAL.
    fast: ClassVar[frozenset[WriteKind]]

    @abstractmethod
    async def commit(self, kind: WriteKind, writes: Sequence[Write]) -> Fenced:
        """Commit `writes` (all of `kind`, or any when GENERAL) in one transaction; return the
        pairs fenced off (always empty for GENERAL, which raises `LeaseLost` instead)."""

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
