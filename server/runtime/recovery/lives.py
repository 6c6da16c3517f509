"""The lives of a response: each recovery starts a new one, recorded as a takeover.

Job: `Lives.begin_all(rows, states)` records that this replica takes each of `rows` over (when,
from which checkpoint, the span id of the life it starts; the operator view lists them) and
starts each life's run span in the response's trace, linked to the life before (`telemetry`).

Invariant: a takeover is recorded once per claim (`attempt` is the response's recovery count
after the claim), before the new life writes anything.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

from ...store import ResponseRow, ResumeState, Store
from ...store.ops.ops import Takeover
from ..run.telemetry import RunTrace, Telemetry


class Lives:
    def __init__(self, store: Store, telemetry: Telemetry, owner: str) -> None:
        self._store = store
        self._telemetry = telemetry
        self._owner = owner

    async def begin_all(
        self, rows: Sequence[ResponseRow], states: Mapping[str, ResumeState]
    ) -> dict[str, RunTrace]:
        """Start the next life of each of `rows` (claimed; `states`: what recovery read of them,
        their takeovers and newest checkpoint): their traces, by response id, once their
        takeovers are recorded (one write for all)."""
        traces: dict[str, RunTrace] = {}
        records: list[tuple[str, Takeover]] = []
        for row in rows:
            state = states[row.id]
            trace, previous_owner = self._next_life(row, state.takeovers)
            traces[row.id] = trace
            checkpoint = state.checkpoint
            records.append(
                (
                    row.id,
                    Takeover(
                        attempt=row.recovery_count,
                        at=time.time(),
                        owner=self._owner,
                        previous_owner=previous_owner,
                        checkpoint_id=checkpoint.checkpoint_id if checkpoint is not None else None,
                        span_id=trace.span_id or None,
                    ),
                )
            )
        await self._store.ops.record_takeovers(records)
        return traces

    def _next_life(self, row: ResponseRow, takeovers: Sequence[Takeover]) -> tuple[RunTrace, str | None]:
        """The run span of the life after the last recorded one, and that life's owner."""
        previous_span: str | None
        previous_owner: str | None
        if takeovers:
            last = takeovers[-1]
            previous_span, previous_start, previous_owner = last.span_id, last.at, last.owner
        else:
            stored = _stored(row.trace_context)
            previous_span, previous_start, previous_owner = stored.get("run"), row.created_at, row.created_by
        trace = self._telemetry.next_life(
            row.id,
            row.trace_context,
            life=len(takeovers) + 2,
            previous_span=previous_span,
            previous_start=previous_start,
            previous_owner=previous_owner,
            delivery=row.delivery,
            background=row.background,
        )
        return trace, previous_owner


def _stored(raw: str | None) -> dict[str, str]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
