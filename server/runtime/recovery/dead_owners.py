"""Dead owners (PostgreSQL, liveness locks: `store/db/_pg_liveness.py`): which responses a dead
replica held, which of them are this replica's share, and their claim.

Invariants:
- Only a process that holds its own liveness lock judges others (`Store.judges_liveness`).
- A dead owner's responses are shared among the live members: the i-th, in id order, is the
  share of the member ranked i modulo their number; nobody claims before SHARE_AT after it
  first saw them (every survivor has normally seen the same list by then), and a survivor
  claims another's share only DEAD_GRACE after that (its owner may have died too), or after
  it last saw another survivor claim (one that looked late, after some were claimed, numbered
  the rest differently and claims part of this one's share as its own).
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
# survivor leaves a dead owner's response to the survivor whose share it is before it claims it.
LIVENESS_POLL = 0.2
FULL_LOOK = 2.0
SHARE_AT = 0.3
DEAD_GRACE = 0.6


class DeadOwners:
    def __init__(self, store: Store, lanes: Lanes, owner: str) -> None:
        self._store = store
        self._lanes = lanes
        self._owner = owner
        # Dead-owned response id -> when to claim it (wall), and whether it is this process's share.
        self._seen: dict[str, tuple[float, bool]] = {}
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
        if others_claim:
            # Another survivor is claiming. One that first looked after some were claimed numbers
            # the rest differently, so part of what is its share here is this one's there: it
            # claims that part DEAD_GRACE after its own claims, which this one sees up to a
            # look (LIVENESS_POLL) late: leave it that long from now.
            for rid, (when, mine) in plan.items():
                if not mine:
                    plan[rid] = (max(when, now + DEAD_GRACE + LIVENESS_POLL), mine)
        key = self._store.liveness_key
        rank = members.index(key) if key is not None and key in members else -1
        alone = rank < 0 or len(members) <= 1
        for i, (rid, _old) in enumerate(dead):
            if rid not in plan:
                mine = alone or i % len(members) == rank
                plan[rid] = ((now if alone else now + SHARE_AT) + (0.0 if mine else DEAD_GRACE), mine)
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
