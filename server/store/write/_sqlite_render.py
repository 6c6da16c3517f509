"""SQLite's renderer: a `Batch` (`_batch`) as the statements of one transaction, run on the
driver's cursor (`run`). The statements' text comes from the table metadata (`_sql`'s row specs,
`FINISH_COLUMNS`); single-row parameters are bound by name.

Order: creations (and the pending requests they answer, the items added by hand they claim, the
conversations they use, created on first use and live: all or, `AnswersTaken` / `ItemsTaken` /
`ConversationDeleted`, nothing of the transaction), then the fences (a fresh lease only read, in a
few statements, `leases_of`; a lease to renew or a row to change updated, the terminal transition
in the same UPDATE), then every kept write's rows, one multi-row INSERT per table and chunk
(`insert_rows`), then the deletions (which see those rows) and webhook events.

Rows go as multi-row INSERTs with fixed SQL: `executemany` steps the statement once per row and
releases the GIL around every step; while the event loop's thread runs Python (an agent's burst)
this thread then waits up to the interpreter's switch interval (5 ms) to get it back, per row:
210 events took 0.66 s where multi-row statements took 32 ms (measured with a busy main thread).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import AnswersTaken, ConversationDeleted, ItemsTaken
from ..records import STALE_CLAIM_SECONDS
from . import _sql
from ._batch import Batch, Fence

# Rows per multi-row INSERT; a batch is split into chunks of 128, 64, ..., 1 rows so each
# table needs at most 8 statements in the driver's cache (and 128 x 9 columns stays far below
# SQLite's limit of bound variables).
CHUNK = 128

_ROW_SPECS = (_sql.EVENTS, _sql.ITEMS, _sql.CHECKPOINTS, _sql.PENDING, _sql.JOURNAL)
_FINISH = ", ".join(f"{c} = :{c}" for c in _sql.FINISH_COLUMNS)
# A fence that changes the row (a lease to renew, a status, a usage, the journal's counts).
_FENCE = (
    "UPDATE responses SET lease_expires_at = :until, status = COALESCE(:status, status), "
    "usage = COALESCE(:usage, usage), journal = COALESCE(:journal, journal) "
    "WHERE id = :id AND lease_owner = :owner"
)
# A fence with the terminal transition: one UPDATE, as on PostgreSQL.
_END = (
    f"UPDATE responses SET {_FINISH}, journal = COALESCE(:journal, journal), "
    "lease_owner = NULL, lease_expires_at = NULL WHERE id = :id AND lease_owner = :owner"
)
_ANSWER = (
    "UPDATE pending_requests SET status = 'answered', answered_by = :by "
    "WHERE response_id = :id AND user_id = :user AND call_id = :call AND status = 'pending'"
)
_CLAIM = (
    "UPDATE conversation_items SET response_id = :by, claimed_at = :now "
    "WHERE seq = :seq AND user_id = :user AND conversation_id = :conv AND (response_id IS NULL "
    "OR (claimed_at < :stale AND NOT EXISTS (SELECT 1 FROM responses WHERE responses.id = "
    "conversation_items.response_id)))"
)
_USE = (
    "INSERT INTO conversations (user_id, id, created_at) VALUES (:user, :conv, :now) ON CONFLICT DO NOTHING"
)
_DELETED = "SELECT 1 FROM conversations WHERE user_id = :user AND id = :conv AND deleted_at IS NOT NULL"
_LEASES_HEAD = "SELECT id, lease_owner, lease_expires_at FROM responses WHERE id IN "
_JOURNAL_KEEP = "DELETE FROM journal WHERE response_id = :id AND checkpoint_id <> :keep"
_JOURNAL_CLEAR = "DELETE FROM journal WHERE response_id = :id"
_HOOK_EVENTS = _sql.WEBHOOK_EVENT_COLUMNS
_HOOK_DELIVERIES = _sql.WEBHOOK_DELIVERY_COLUMNS


def _head(table: str, columns: Sequence[str]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)})"


def _marks(n: int) -> str:
    """`(?, ?, ..., ?)` with `n` parameters."""
    return "(" + ", ".join("?" for _ in range(n)) + ")"


@functools.lru_cache(maxsize=128)
def _insert_sql(head: str, columns: int, rows: int) -> str:
    one = _marks(columns)
    return f"{head} VALUES {', '.join(one for _ in range(rows))}"


def insert_rows(cur: sqlite3.Cursor, head: str, rows: Sequence[Sequence[object]]) -> None:
    """INSERT `rows` (in the columns' order of `head`) with a few multi-row statements."""
    if not rows:
        return
    columns = len(rows[0])
    for i, k in _chunks(len(rows)):
        cur.execute(_insert_sql(head, columns, k), [v for row in rows[i : i + k] for v in row])


def _chunks(n: int) -> Iterator[tuple[int, int]]:
    """(start, size) of the chunks of 128, 64, ..., 1 that `n` rows split into."""
    i = 0
    while i < n:
        k = min(CHUNK, 1 << ((n - i).bit_length() - 1))
        yield i, k
        i += k


@functools.lru_cache(maxsize=16)
def _leases_sql(ids: int) -> str:
    return _LEASES_HEAD + _marks(ids)


def leases_of(cur: sqlite3.Cursor, ids: Sequence[str]) -> dict[str, tuple[str | None, float | None]]:
    """The lease (owner, expiry) of each of `ids` that exists, in a few statements.

    One SELECT per response gave the GIL away once per response, and the writer thread, which
    shares it with a busy event loop, then waited to get it back each time: at 25 live streams a
    commit carried ~25 such checks, and the writer thread woke ~0.4 times per token.
    """
    found: dict[str, tuple[str | None, float | None]] = {}
    for i, k in _chunks(len(ids)):
        for rid, owner, until in cur.execute(_leases_sql(k), list(ids[i : i + k])):
            found[rid] = (owner, until)
    return found


_HEADS = {
    spec.table.name: _head(spec.table.name, spec.columns)
    for spec in (*_ROW_SPECS, _sql.RESPONSES, _sql.INPUTS)
}


def run(cur: sqlite3.Cursor, batch: Batch) -> set[tuple[str, str]]:
    """Commit `batch`'s statements on `cur` (inside the caller's transaction); return the
    (response, owner) pairs fenced off: their writes committed nothing."""
    if batch.creations:
        rows, inputs = [], []
        for w in batch.creations:
            assert w.create is not None
            row, input_rows = w.create
            rows.append(_sql.RESPONSES.values(row))
            inputs.extend(_sql.INPUTS.keyed_rows(row.id, input_rows))
        insert_rows(cur, _HEADS["responses"], rows)
        insert_rows(cur, _HEADS["input_items"], inputs)
        _answer(cur, batch)
    lost = _fence(cur, batch.fences) if batch.fences else set()
    kept = batch.kept(lost)
    every = [*kept, *batch.unowned] if batch.unowned else kept
    for spec in _ROW_SPECS:
        insert_rows(cur, _HEADS[spec.table.name], spec.rows(every))
    for f in batch.fences:
        if f.key not in lost:
            _deletions(cur, f)
    _webhooks(cur, batch, kept)
    return lost


def _answer(cur: sqlite3.Cursor, batch: Batch) -> None:
    """Mark the pending requests each creation answers and the items added by hand it claims,
    and use their conversations (created on first use); `AnswersTaken` / `ItemsTaken` /
    `ConversationDeleted` (the caller rolls the transaction back) if one was taken, or a
    conversation used was deleted."""
    for by, answers in batch.answered():
        refused = []
        for call in answers.call_ids:
            cur.execute(_ANSWER, {"by": by, "id": answers.response_id, "user": answers.user_id, "call": call})
            if cur.rowcount != 1:
                refused.append(call)
        if refused:
            raise AnswersTaken(by, refused)
    stale = batch.now - STALE_CLAIM_SECONDS
    for by, claims in batch.claimed():
        conv = {"user": claims.user_id, "conv": claims.conversation_id}
        cur.execute(_USE, {**conv, "now": batch.now})
        # Deleted since the creation read it live (or absent: then created by another first
        # use); the write lock, held from BEGIN IMMEDIATE, keeps it as read until this
        # transaction ends.
        if cur.execute(_DELETED, conv).fetchone() is not None:
            raise ConversationDeleted(by, claims.conversation_id)
        for seq in claims.seqs:
            params = {"by": by, "now": batch.now, "stale": stale, "seq": seq}
            cur.execute(_CLAIM, {**params, "user": claims.user_id, "conv": claims.conversation_id})
            if cur.rowcount != 1:
                raise ItemsTaken(by)


def _fence(cur: sqlite3.Cursor, fences: Sequence[Fence]) -> set[tuple[str, str]]:
    """Check or renew each fence's lease (and change its row); the pairs whose lease another
    owner holds. A write with nothing to change but a lease that is still fresh only reads it:
    the database's write lock, held from BEGIN IMMEDIATE, serializes it with every takeover,
    and the response's row and lease index stay untouched."""
    lost: set[tuple[str, str]] = set()
    checked = [f for f in fences if f.check_only]
    leases = leases_of(cur, [f.response_id for f in checked]) if checked else {}
    for f in fences:
        if f.check_only:
            owner, until = leases.get(f.response_id, (None, None))
            if owner != f.owner:
                lost.add(f.key)
                continue
            if until is not None and until >= f.renew_below:
                continue  # owned, and the lease is still fresh
        params: dict[str, Any] = {"id": f.response_id, "owner": f.owner, "journal": f.journal_stats}
        if f.finish is not None:
            params.update(zip(_sql.FINISH_COLUMNS, _sql.finish_values(f.finish), strict=True))
            cur.execute(_END, params)
        else:
            params.update(until=f.until, status=f.status, usage=f.usage)
            cur.execute(_FENCE, params)
        if cur.rowcount != 1:
            lost.add(f.key)
    return lost


def _deletions(cur: sqlite3.Cursor, f: Fence) -> None:
    if f.prune is not None:
        cur.execute(_sql.PRUNE, {"b_id": f.response_id, "b_user": f.prune[0], "b_lineage": f.prune[1]})
    if f.journal_clear:
        cur.execute(_JOURNAL_CLEAR, {"id": f.response_id})
    elif f.journal_keep is not None:
        cur.execute(_JOURNAL_KEEP, {"id": f.response_id, "keep": f.journal_keep})


def _webhooks(cur: sqlite3.Cursor, batch: Batch, kept: Sequence[Any]) -> None:
    events: list[tuple[Any, ...]] = []
    deliveries: list[tuple[Any, ...]] = []
    for w in kept:
        for e in w.webhooks:
            event = _sql.webhook_event_row(e)
            events.append(tuple(event[c] for c in _HOOK_EVENTS))
            deliveries.extend(
                tuple(d[c] for c in _HOOK_DELIVERIES) for d in _sql.webhook_delivery_rows(e, batch.now)
            )
    insert_rows(cur, _head("webhook_events", _HOOK_EVENTS), events)
    insert_rows(cur, _head("webhook_deliveries", _HOOK_DELIVERIES), deliveries)
