"""Whether the database can be used right now, as the store's own operations find it.

Job: every read and write the store makes reports here (`_base._read`/`_write`, the outbox's
commits), so the process knows, without probing, whether reads and writes work, and says so in
the log once per change of condition: when it goes down, every `reminder_seconds` while it
stays down, and when it is back, with how long it lasted and how many operations failed. No
caller logs a `DatabaseUnavailable` itself: 20 reconnecting clients are not 20 lines a second.

Invariants:
- Writes failing is a condition of its own: a full SQLite disk still answers reads, and a
  read that works says nothing about writes. Only a committed write clears it.
- The state changes synchronously with the report (no task, no I/O): callers on the event
  loop and in the SQLite writer's thread alike only swap in a new outage record.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from enum import StrEnum

from ..errors import DatabaseUnavailable

log = logging.getLogger("durable_responses.database")

# How often "still unavailable" is repeated while the database stays down.
REMINDER_SECONDS = 10.0


class Op(StrEnum):
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class _Outage:
    started: float
    first: DatabaseUnavailable
    reads_failing: bool
    writes_failing: bool
    failures: int = 1
    last_reminder: float = 0.0
    last_failure: float = 0.0


class DatabaseHealth:
    def __init__(self, *, reminder_seconds: float = REMINDER_SECONDS) -> None:
        self._reminder = reminder_seconds
        self._outage: _Outage | None = None
        self._lock = threading.Lock()  # the SQLite writer thread reports too

    @property
    def writes_failing(self) -> bool:
        """Whether the last write failed because the database could not be used (and none
        has committed since): `/readiness` fails meanwhile."""
        outage = self._outage
        return outage is not None and outage.writes_failing

    def quiet_for(self) -> float:
        """Seconds since the last failure of the current outage (0 when there is none): after
        a while without any, only a probe can tell whether writes work again."""
        outage = self._outage
        return time.monotonic() - outage.last_failure if outage is not None else 0.0

    @property
    def down(self) -> DatabaseUnavailable | None:
        """The condition of the current outage (its first error), None while the database works."""
        outage = self._outage
        return outage.first if outage is not None else None

    def failed(self, exc: DatabaseUnavailable, op: Op) -> None:
        now = time.monotonic()
        with self._lock:
            outage = self._outage
            if outage is None:
                self._outage = _Outage(
                    started=now,
                    first=exc,
                    reads_failing=op is Op.READ,
                    writes_failing=op is Op.WRITE,
                    last_reminder=now,
                    last_failure=now,
                )
                line: str | None = f"database unavailable ({op.value}s fail): {exc.log_text()}"
            else:
                changed = (op is Op.READ and not outage.reads_failing) or (
                    op is Op.WRITE and not outage.writes_failing
                )
                remind = now - outage.last_reminder >= self._reminder or changed
                outage = self._outage = replace(
                    outage,
                    failures=outage.failures + 1,
                    last_failure=now,
                    reads_failing=outage.reads_failing or op is Op.READ,
                    writes_failing=outage.writes_failing or op is Op.WRITE,
                    last_reminder=now if remind else outage.last_reminder,
                )
                line = (
                    f"database still unavailable after {now - outage.started:.1f}s "
                    f"({outage.failures} operations failed, {_what(outage)}): {exc.log_text()}"
                    if remind
                    else None
                )
        if line is not None:
            log.error(line)

    def succeeded(self, op: Op) -> None:
        outage = self._outage
        if outage is None:
            return  # the common case: no lock, nothing to do
        with self._lock:
            outage = self._outage
            if outage is None:
                return
            if op is Op.READ and outage.writes_failing:
                if outage.reads_failing:
                    self._outage = replace(outage, reads_failing=False)
                return  # reads work again; writes must prove themselves
            self._outage = None
        log.warning(
            "database is back after %.1fs (%d operations failed meanwhile)",
            time.monotonic() - outage.started,
            outage.failures,
        )


def _what(outage: _Outage) -> str:
    if outage.reads_failing and outage.writes_failing:
        return "reads and writes fail"
    return "writes fail" if outage.writes_failing else "reads fail"
