"""Each response's last committed event, as this process knows it: no gap can enter a sequence.

Invariant 4: a response's events are numbered 0, 1, 2, ... without a gap. The outbox checks
every write's first event against the last one it committed for that response; after a failed
write nothing later of that response commits from this process until recovery re-reads its
position (`forget`), so a gap can never appear.
"""

from __future__ import annotations

from ..errors import StoreError
from ..records import Write


class Sequences:
    def __init__(self) -> None:
        self._last: dict[str, int] = {}  # last committed event seq per response (this process)

    def forget(self, response_id: str) -> None:
        self._last.pop(response_id, None)

    def check(self, writes: list[Write]) -> dict[str, int | None]:
        """Refuse a write whose events do not follow the last ones committed; return each
        response's last event after `writes` (None: finished, no longer tracked)."""
        last: dict[str, int | None] = {}
        for w in writes:
            if not w.events:
                continue
            rid = w.response_id
            # A creation starts a sequence (a duplicate creation fails on its primary key).
            expected = None if w.create is not None else last[rid] if rid in last else self._last.get(rid)
            first = w.events[0].seq
            if expected is not None and first != expected + 1:
                raise StoreError(
                    f"response {rid}: event {first} does not follow the last committed event {expected}"
                )
            last[rid] = w.events[-1].seq
        for w in writes:
            if w.finish is not None:
                last[w.response_id] = None  # finished: stop tracking
        return last

    def advance(self, advanced: dict[str, int | None], lost_ids: set[str]) -> None:
        """Record what `check` returned once its writes committed (all but `lost_ids`'s)."""
        for rid, seq in advanced.items():
            if rid in lost_ids:
                continue
            if seq is None:
                self._last.pop(rid, None)
            else:
                self._last[rid] = seq
