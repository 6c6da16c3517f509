"""Dead owners (PostgreSQL, liveness locks: `store/db/_pg_liveness.py`): which responses a dead
replica held, which of them are this replica's share, and their claim.

Invariants:
- Only a process that holds its own liveness lock judges others (`Store.judges_liveness`).
- A dead owner's responses are shared among the live members: the i-th, in id order, is the
  share of the member ranked i modulo their number; nobody claims before SHARE_AT after it
  first saw them (every survivor has normally seen the same list by then).
- A share whose member dies too is shared again, the same way, among the members left: the
  survivors agree on it because they numbered the first list alike.
- A survivor claims a live member's share only DEAD_GRACE after that (the member holds its
  lock but claims nothing: stalled), or after it last saw another survivor claim (one that
  looked late, after some were claimed, numbered the rest differently and claims part of this
  one's share as its own).
- The claim is the store's `claim_dead`, fenced like every claim: a response another survivor
  claimed meanwhile is not claimed again.
"""

from __future__ import annotations

import logging
import time

from ...observability import metrics
from ...store import ResponseRow, Store
from ..apps.lanes import Lanes

log = logging.getLogger("durable_responses.recovery")

# How often a sleeping recovery reads the live members (one read of the lock table), how often it
# also reads the active responses for dead owners when no member went away, and how long a
# survivor leaves a dead owner's response to the live survivor whose share it is before it claims
# it. A survivor whose process is busy (two pytest runs on two cores) looks up to ~1 s late; one
# that died too loses its lock, and its share is shared again at once, so the grace only bounds
# how long a live but stalled member holds up its share: well under half the default lease.
LIVENESS_POLL = 0.2
FULL_LOOK = 2.0
SHARE_AT = 0.3
DEAD_GRACE = 3.0


class DeadOwners:
    def __init__(self, store: Store, lanes: Lanes, owner: str) -> None:
        self._store = store
        self._lanes = lanes
        self._owner = owner
        # Dead-owned response id -> when to claim it (wall), and the member whose share it is.
        self._seen: dict[str, tuple[float, int | None]] = {}
        self._claimed: set[str] = set()  # of those, the ones this process claimed
        self._last_members: list[int] | None = None
        self._lost_member = False
        self._full_look = 0.0  # when the responses were last looked at for dead owners (monotonic)

    @property
    def alone(self) -> bool:
        """Whether this process was the only live member at the last look (no survivor to share with)."""
        members, key = self._last_members, self._store.liveness_key
        return members is not None and key is not None and set(members) <= {key}

    async def _plan(self) -> list[tuple[str, str]]:
        """Read the responses whose owner is dead by its liveness lock and plan their claims;
        returns those due now (this process's share, and any left to another survivor for
        DEAD_GRACE more). Alone, a survivor claims at once."""
        members = await self._members()
        if members is None:
            return []
        dead = await self._store.dead_owned(self._owner, members)
        self._full_look = time.monotonic()
        now = time.time()
        found = dict(dead)
        plan = self._seen
        gone = [r for r in plan if r not in found]
        others_claim = any(r not in self._claimed for r in gone)
        for rid in gone:
            del plan[rid]
            self._claimed.discard(rid)
        key = self._store.liveness_key
        alone = key is None or key not in members or len(members) <= 1
        if others_claim:
            # Another survivor is claiming. One that first looked after some were claimed numbers
            # the rest differently, so part of what is its share here is this one's there: it
            # claims that part DEAD_GRACE after its own claims, which this one sees up to a
            # look (LIVENESS_POLL) late: leave it that long from now.
            for rid, (when, member) in plan.items():
                if member != key:
                    plan[rid] = (max(when, now + DEAD_GRACE + LIVENESS_POLL), member)
        # The shares of members that died since: shared again among the members left.
        orphans = sorted(rid for rid, (_when, member) in plan.items() if member not in members)
        fresh = [rid for rid, _old in dead if rid not in plan]
        for ids, start in ((orphans, now), (fresh, now + SHARE_AT)):
            for i, rid in enumerate(ids):
                member = key if alone else members[i % len(members)]
                plan[rid] = ((now if alone else start) + (0.0 if member == key else DEAD_GRACE), member)
        return [(rid, old) for rid, old in dead if plan[rid][0] <= now]

    async def _members(self) -> list[int] | None:
        """The live members' lock keys (None: this process holds no lock to judge by)."""
        database = self._store.liveness_database
        if database is None:
            return None
        members = await self._store.live_members(database)
        self._lost_member = self._last_members is not None and not set(self._last_members) <= set(members)
        self._last_members = members
        return members

    async def due(self) -> bool:
        """Between sweeps (every LIVENESS_POLL): whether a dead owner's responses are due now.
        Only the lock table is read, unless a member went away since the last look, some are
        planned already, or FULL_LOOK passed since the last look at the responses (an owner that
        never held its lock)."""
        members = await self._members()
        if members is None:
            return False
        if not (self._lost_member or self._seen or time.monotonic() - self._full_look >= FULL_LOOK):
            return False
        return bool(await self._plan())

    async def claim(self) -> list[ResponseRow]:
        """Claim the responses of dead owners that are due."""
        due = await self._plan()
        rows = await self._store.claim_dead(self._owner, due, self._lanes.runnable)
        self._claimed.update(row.id for row in rows)
        if rows:
            metrics.TAKEOVERS.inc(len(rows))
            log.info("took over %d responses of dead replicas at once (liveness lock gone)", len(rows))
        return rows
