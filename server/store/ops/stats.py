"""Counters the store keeps for its operator (a metrics endpoint exports `Store.stats`).

Invariant: counters only grow, and only the outbox's writer task changes them (one event-loop
thread): a snapshot (`Store.stats`) is a consistent copy taken between two batches.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..write._writer import WriteKind


@dataclass
class OutboxStats:
    """The outbox's books: transactions, and writes and fallbacks per kind of write."""

    commits: int = 0
    # Transactions by their writes' kind (`WriteKind.of_commit`: one kind, or mixed).
    commits_by_kind: Counter[WriteKind] = field(default_factory=Counter)
    writes_by_kind: Counter[WriteKind] = field(default_factory=Counter)
    # (kind of a write retried alone after its batch failed, cause) -> how often. Causes: an
    # error's type (e.g. `UniqueViolationError`), or `unavailable:<reason>`.
    fallbacks: Counter[tuple[WriteKind, str]] = field(default_factory=Counter)
    failed_writes: int = 0
    events: int = 0  # response events committed

    def committed(self, kinds: Counter[WriteKind], events: int = 0) -> None:
        self.commits += 1
        self.commits_by_kind[WriteKind.of_commit(kinds)] += 1
        self.writes_by_kind.update(kinds)
        self.events += events

    def failed(self, writes: int) -> None:
        self.failed_writes += writes

    def fell_back(self, kind: WriteKind, cause: str) -> bool:
        """Count one fallback; True the first time for this (kind, cause)."""
        key = (kind, cause)
        first = key not in self.fallbacks
        self.fallbacks[key] += 1
        return first


@dataclass(frozen=True)
class StoreStats:
    """A snapshot of the store's counters and connection state (`Store.stats`).

    `prepared_statements` and `transaction_pooler` (PostgreSQL) are None until decided (at the
    first connection); `cross_process_wakeups` says whether relays of responses driven by other
    replicas are woken (LISTEN is up) or poll.
    """

    dialect: str
    commits: int
    commits_by_kind: dict[str, int]
    writes_by_kind: dict[str, int]
    fallbacks: dict[tuple[str, str], int]
    failed_writes: int
    events: int
    prepared_statements: bool | None
    transaction_pooler: bool | None
    cross_process_wakeups: bool

    @property
    def fallbacks_total(self) -> int:
        return sum(self.fallbacks.values())
