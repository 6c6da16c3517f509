"""How a response's events are stored: a run of consecutive events in one row (no SQL, no I/O).

A row of `events` (`_tables.events`) is keyed by (response id, `seq`), `seq` the LAST event's
sequence number of the row, so `max(seq)` is still the response's last event and a page read
from `after` starts at the first row whose `seq` is greater. A row holds `size` events:
- `size` 1: one event, `type` its type, `data` its JSON (or `packed`: its JSON compressed).
  Rows written before migration 0008 all have this form (the column's default is 1).
- `size` > 1: events `seq - size + 1` .. `seq` of one write, `type` empty, their lines
  (`type`, `UNIT`, the JSON; lines joined by `LINE`) in `data`, or compressed in `packed`.
  Both are control characters, which JSON text never holds unescaped (nor does a type), and
  neither is the newline PostgreSQL's packed arrays are joined by (`_sql.pack`).

Why: one row per event cost ~340 bytes a row (its key, header, index entry and the wrapper
fields each event repeats) and one row insert each; a 1000-output response stored 6,004 rows,
2.6 MB of them. Runs of up to `RUN` events compressed together (zlib level 1) take ~30 bytes
an event: what they repeat (item ids, the wrapper fields, an item again in its `done` event and
in `response.completed`) compresses within the run. A run is bounded so a page read from the
middle of one decodes at most `RUN` events it does not return: replay stays flat per event.

The wire is unchanged: each event's JSON is stored and returned byte for byte, with the
sequence number its row's position gives it (the same the JSON holds).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from ..records import EventRow, StoredEvents

# Events per row at most: what a read from inside a row decodes beyond its page.
RUN = 256
# A row's text is compressed from this many bytes on: below it, zlib's fixed cost (~8 us a
# call) buys little (a live stream's commit holds a few small events).
COMPRESS_FROM = 1024
_LEVEL = 1  # zlib's fastest: 185 KB for a 1000-output response's 1.5 MB of events (level 6: 156 KB)
LINE, UNIT = "\x1e", "\x1f"  # ASCII's record and unit separators


def encode(events: Sequence[EventRow]) -> list[StoredEvents]:
    """The rows of one write's events: runs of consecutive sequence numbers, `RUN` at most."""
    if not events:
        return []
    if len(events) == 1:
        e = events[0]
        return [_one(e.seq, e.type, e.data)]
    out: list[StoredEvents] = []
    start = 0
    for i in range(1, len(events) + 1):
        if i == len(events) or i - start == RUN or events[i].seq != events[i - 1].seq + 1:
            out.extend(_run(events[start:i]))
            start = i
    return out


def _one(seq: int, type_: str, data: str) -> StoredEvents:
    if len(data) < COMPRESS_FROM:
        return StoredEvents(seq, type_, data, 1, None)
    return StoredEvents(seq, type_, "", 1, zlib.compress(data.encode(), _LEVEL))


def _run(events: Sequence[EventRow]) -> list[StoredEvents]:
    if len(events) == 1:
        e = events[0]
        return [_one(e.seq, e.type, e.data)]
    text = LINE.join([f"{e.type}{UNIT}{e.data}" for e in events])
    # A separator inside an event (not JSON's text, or a type that is not a name): those
    # events go one per row.
    if text.count(LINE) != len(events) - 1 or text.count(UNIT) != len(events):
        return [_one(e.seq, e.type, e.data) for e in events]
    last = events[-1].seq
    if len(text) < COMPRESS_FROM:
        return [StoredEvents(last, "", text, len(events), None)]
    return [StoredEvents(last, "", "", len(events), zlib.compress(text.encode(), _LEVEL))]


def decode(rows: Iterable[Sequence[Any]], after: int, upper: int | None = None) -> list[EventRow]:
    """The events with `after < seq <= upper` (no upper bound: None) of `rows`, each
    (seq, type, data, size, packed) in `seq` order."""
    out: list[EventRow] = []
    for seq, type_, data, size, packed in rows:
        if size == 1:
            if seq > after and (upper is None or seq <= upper):
                text = data if packed is None else zlib.decompress(packed).decode()
                out.append(EventRow(seq, type_, text))
            continue
        first = seq - size + 1
        if upper is not None and first > upper:
            break
        text = data if packed is None else zlib.decompress(packed).decode()
        lines = text.split(LINE)
        if len(lines) != size:
            raise ValueError(f"events row {seq} holds {len(lines)} events, not {size}")
        lo = max(after + 1 - first, 0)
        hi = size if upper is None else min(upper - first + 1, size)
        for i in range(lo, hi):
            t, _, d = lines[i].partition(UNIT)
            out.append(EventRow(first + i, t, d))
    return out
