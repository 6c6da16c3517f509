"""How survivors share a dead replica's responses (`DeadOwners`, PostgreSQL liveness locks),
against a store that plays the lock table and the responses: each claims its share after
SHARE_AT, another live member's only DEAD_GRACE later, and not while it sees another survivor
claiming (one that looked late numbers the rest differently and claims part of this one's
share); the share of a member that dies too is shared again at once."""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from durable_responses.runtime.recovery import dead_owners
from durable_responses.runtime.recovery.dead_owners import DeadOwners

ME, OTHER, THIRD = 1, 2, 3


class FakeStore:
    def __init__(self, ids: list[str]) -> None:
        self.liveness_database = 1
        self.liveness_key = ME
        self.dead = {rid: "dead:live-x" for rid in ids}
        self.members = [ME, OTHER]

    async def live_members(self, database: int) -> list[int]:
        return list(self.members)

    async def dead_owned(self, owner: str, members: Sequence[int]) -> list[tuple[str, str]]:
        return sorted(self.dead.items())

    async def claim_dead(self, owner: str, due: Sequence[tuple[str, str]], runnable: Any) -> list[Any]:
        for rid, _ in due:
            self.dead.pop(rid, None)
        return [SimpleNamespace(id=rid) for rid, _ in due]


def _owners(ids: list[str]) -> tuple[DeadOwners, FakeStore]:
    store = FakeStore(ids)
    return DeadOwners(store, SimpleNamespace(runnable=None), "me:live-1"), store  # type: ignore[arg-type]


async def test_each_claims_its_share_then_the_rest_after_the_grace(monkeypatch: Any) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    ids = [f"r{i:02d}" for i in range(12)]
    owners, _store = _owners(ids)
    assert await owners.claim() == []  # nobody claims before SHARE_AT
    clock[0] += dead_owners.SHARE_AT
    mine = [r.id for r in await owners.claim()]
    assert mine == ids[0::2]  # rank 0 of 2: the even ones
    clock[0] += dead_owners.DEAD_GRACE
    assert [r.id for r in await owners.claim()] == ids[1::2]  # the other never came


async def test_another_survivor_claiming_defers_its_share(monkeypatch: Any) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    ids = [f"r{i:02d}" for i in range(12)]
    owners, store = _owners(ids)
    await owners.claim()
    clock[0] += dead_owners.SHARE_AT
    await owners.claim()  # ours: the even ones
    # The other survivor, which looked late, claims half of what is its share here.
    for rid in ids[1:6:2]:
        store.dead.pop(rid)
    clock[0] += dead_owners.DEAD_GRACE - 0.05
    assert await owners.claim() == []  # it is claiming: its share is left to it
    clock[0] += dead_owners.DEAD_GRACE
    assert await owners.claim() == []
    clock[0] += dead_owners.LIVENESS_POLL + 0.1
    assert sorted(r.id for r in await owners.claim()) == ids[7::2]  # it stopped: taken after all


async def test_the_share_of_a_member_that_died_too_is_shared_again_at_once(monkeypatch: Any) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    ids = [f"r{i:02d}" for i in range(12)]
    owners, store = _owners(ids)
    store.members = [ME, OTHER, THIRD]
    await owners.claim()
    clock[0] += dead_owners.SHARE_AT
    assert [r.id for r in await owners.claim()] == ids[0::3]  # rank 0 of 3
    store.members = [ME, OTHER]  # the third survivor died before it claimed its share
    clock[0] += dead_owners.LIVENESS_POLL
    # Its share (r02, r05, r08, r11), numbered again over the two left: ours is every other one.
    assert [r.id for r in await owners.claim()] == ["r02", "r08"]
    died = clock[0]
    clock[0] = 1000.0 + dead_owners.SHARE_AT + dead_owners.DEAD_GRACE - 0.05
    assert await owners.claim() == []  # the live one's share is left to it
    clock[0] += 0.1
    assert [r.id for r in await owners.claim()] == ids[1::3]  # it stalled: taken
    clock[0] = died + dead_owners.DEAD_GRACE
    assert [r.id for r in await owners.claim()] == ["r05", "r11"]  # its part of the third's share too
