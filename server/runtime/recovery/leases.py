"""Keeping leases: this process renews the lease of every response it runs, and notices
cancellations requested through another replica.

Invariants:
- A lease is renewed every third of its length, so it never expires under a live run while
  the database answers; a run whose lease was taken by another process is stopped (abandon:
  it writes nothing more, the new owner continues).
- The lease length is the store's (`Store.lease_seconds`): one value for renewal and expiry.
"""

from __future__ import annotations

import asyncio
import logging

from ...store import Store
from ..faults import database_error
from ..run.registry import RunRegistry
from ..run.run import StopKind

log = logging.getLogger("durable_responses.leases")


class LeaseKeeper:
    def __init__(self, store: Store, registry: RunRegistry, owner: str) -> None:
        self._store = store
        self._registry = registry
        self._owner = owner

    @property
    def interval(self) -> float:
        return max(self._store.lease_seconds / 3, 0.2)

    async def loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.renew()
            except Exception as exc:
                # A database that cannot be used is in the store's health log, once.
                if database_error(exc) is None:
                    log.exception("lease renewal failed")

    async def renew(self) -> None:
        owned = self._registry.owned()
        if not owned:
            return
        kept = await self._store.renew_leases(self._owner, owned)
        for rid in owned:
            if rid not in kept and self._registry.get(rid) is not None:
                log.warning("response %s: lease lost; stopping our run", rid)
                self._registry.stop(rid, StopKind.ABANDON)
        for rid in await self._store.cancel_requested(list(kept)):
            self._registry.stop(rid, StopKind.CANCELLED)
