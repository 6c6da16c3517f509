"""How recovery paces its claims: a replica that may share a dead one's responses with others
claims a couple at a time with pauses; one known to be alone (the only live member, or an
SQLite process alone on its file at start) claims a whole resume batch at a time, at once."""

from __future__ import annotations

from durable_responses.runtime.recovery import recovery
from durable_responses.runtime.recovery.resume import RESUME_BATCH


def test_alone_claims_whole_batches_without_pauses() -> None:
    pace = recovery._Pace(alone=True)
    assert pace.batch() == recovery.ALONE_BATCH == RESUME_BATCH
    assert pace.claimed(RESUME_BATCH, 2 * RESUME_BATCH) == 0.0
    assert pace.batch() == RESUME_BATCH


def test_alone_but_contended_pauses_again() -> None:
    pace = recovery._Pace(alone=True)
    pace.claimed(RESUME_BATCH, 100)
    # Fewer left than this replica's claims explain: another one claims too.
    assert pace.claimed(RESUME_BATCH, 10) > 0.0 and pace.contended


def test_shared_claims_a_couple_with_pauses_at_first() -> None:
    pace = recovery._Pace()
    assert pace.batch() == recovery.FAIR_BATCH
    low, high = recovery.BATCH_PAUSE
    assert low <= pace.claimed(recovery.FAIR_BATCH, 20) <= high
    assert pace.batch() == recovery.FAIR_BATCH
