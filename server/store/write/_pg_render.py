"""PostgreSQL's renderer: a `Batch` (`_batch`) as one statement, or a few in one transaction.

A statement is data-modifying CTEs over unnested arrays, one array per column (`_sql.Params`,
parameters named `table.column` and bound by name, `PgStatement.bind`): the text depends only
on the batch's shape (`Part`: which of its parts it holds), so a live stream's commits reuse
one prepared statement, and a superstep, a creation and an end are each one round trip.

Statements (`parts`), in this order where the batch needs them:
- the pending requests the batch's creations answer (`answers`) and the items added by hand
  they claim (`claims`): marked, the ones marked returned; the writer raises `AnswersTaken` /
  `ItemsTaken` when one was taken meanwhile (its transaction commits nothing);
- creations (response rows, input items) and unowned rows;
- fences and owned rows: the response rows are locked where their owner holds them, in id
  order (`l`), updated only when the write changes them (`f`: a lease to renew, a status, a
  usage, the journal's counts, the terminal transition), and every owned row (and deletion)
  is inserted only for the (response, owner) pairs `l` holds; the statement returns them;
- deletions (old checkpoints, journal records) of the matched pairs.
They share one statement when nothing in one needs to see another's rows (every CTE reads the
statement's snapshot): a fence cannot see a response created beside it, nor a deletion the
rows inserted beside it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .. import _tables as t
from ..records import Write
from . import _pg_takes, _sql
from ._batch import Batch, Fence
from ._sql import Params, PgStatement, pg_type

_HOOK_EVENTS = _sql.WEBHOOK_EVENT_COLUMNS
_HOOK_DELIVERIES = _sql.WEBHOOK_DELIVERY_COLUMNS
# The tables a write's own rows go to, in statement order.
ROW_SPECS = (_sql.EVENTS, _sql.ITEMS, _sql.CHECKPOINTS, _sql.PENDING, _sql.JOURNAL)
# Input items of a batch's creations beyond which they travel as one JSON text, built in a
# worker thread (`Part.inputs_json`): asyncpg encodes arrays element by element on the event
# loop (~0.4 s for 100,000 items, with building the rows), a text parameter is one copy.
BULK_INPUTS = 1000

_r = t.responses.c
# A fence's own columns (besides the terminal transition's, `_sql.FINISH_COLUMNS`).
# A fence's own columns: (parameter, type, `Fence` attribute), besides the terminal
# transition's (`_sql.FINISH_COLUMNS`, from `Fence.finish`).
_FENCE = (
    ("id", pg_type(_r.id), "response_id"),
    ("owner", pg_type(_r.lease_owner), "owner"),
    ("until", pg_type(_r.lease_expires_at), "until"),
    ("below", pg_type(_r.lease_expires_at), "renew_below"),
    ("status", pg_type(_r.status), "status"),
    ("usage", pg_type(_r.usage), "usage"),
    ("journal", pg_type(_r.journal), "journal_stats"),
)
_FINISH = tuple((f"fin_{c}", pg_type(_r[c])) for c in _sql.FINISH_COLUMNS)


@dataclass(frozen=True, slots=True)
class Part:
    """The shape of one statement: which of a batch's parts it holds."""

    answers: bool = False
    claims: bool = False
    creations: bool = False
    inputs_json: bool = False
    fences: bool = False
    finish: bool = False
    guarded: tuple[str, ...] = ()  # tables with owned rows
    plain: tuple[str, ...] = ()  # tables with unowned rows
    prune: bool = False
    keep: bool = False
    clear: bool = False
    webhooks: bool = False


def parts(batch: Batch) -> list[Part]:
    """The statements `batch` takes, in order (see the module). Called per commit: plain
    loops, one `Part` per statement."""
    if not batch.creations:
        return _writes(batch)
    takes = [Part(answers=True)] if batch.answered() else []
    if batch.claimed():
        takes.append(Part(claims=True))
    return [*takes, *_writes(batch)] if takes else _writes(batch)


def _writes(batch: Batch) -> list[Part]:
    """The statements of `batch`'s rows, fences and deletions."""
    creations = bool(batch.creations)
    plain = _tables(batch.unowned) if batch.unowned else ()
    inputs_json = creations and sum(len(w.create[1]) for w in batch.creations if w.create) > BULK_INPUTS
    fences = batch.fences
    if not fences:
        return [Part(creations=creations, inputs_json=inputs_json, plain=plain)] if creations or plain else []
    finish = prune = keep = clear = False
    for f in fences:
        finish = finish or f.finish is not None
        prune = prune or f.prune is not None
        keep = keep or f.journal_keep is not None
        clear = clear or f.journal_clear
    late = (prune or keep or clear) and _deletes_see_rows(fences, [*batch.owned, *batch.unowned])
    # A fence cannot see a response created in the same statement.
    apart = creations and not batch.created_ids().isdisjoint([f.response_id for f in fences])
    out = [Part(creations=True, inputs_json=inputs_json, plain=plain)] if apart else []
    out.append(
        Part(
            creations=creations and not apart,
            inputs_json=inputs_json and not apart,
            plain=() if apart else plain,
            fences=True,
            finish=finish,
            guarded=_tables(batch.owned),
            webhooks=any(w.webhooks for w in batch.owned),
            prune=prune and not late,
            keep=keep and not late,
            clear=clear and not late,
        )
    )
    if late:
        out.append(Part(prune=prune, keep=keep, clear=clear))
    return out


def _tables(writes: Sequence[Write]) -> tuple[str, ...]:
    """The tables `writes` have rows for, in `ROW_SPECS` order."""
    found: set[str] = set()
    for w in writes:
        for name, over in _OVERS:
            if getattr(w, over):
                found.add(name)
    return tuple(name for name, _ in _OVERS if name in found)


_OVERS = tuple((s.table.name, s.over) for s in ROW_SPECS)


def _deletes_see_rows(fences: Sequence[Fence], writes: Sequence[Write]) -> bool:
    """Whether a prune must see a checkpoint this batch inserts (its own statement, after
    them). Journal deletions need not: the form leaves out the records they take (`_batch`)."""
    pruned = {f.response_id for f in fences if f.prune is not None}
    return bool(pruned) and any(w.checkpoint is not None and w.response_id in pruned for w in writes)


# -- statements ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=128)
def statement(part: Part) -> PgStatement:
    """The text of `part`'s shape: the same for every batch of that shape (prepared once)."""
    p = Params()
    if part.answers or part.claims:
        return _pg_takes.statement(part.answers)
    ctes: list[str] = []
    selects: list[str] = []
    if part.creations:
        ctes.extend(_creation_ctes(p, part.inputs_json))
        selects.append("SELECT id, NULL AS owner{notify} FROM r")
    for spec in ROW_SPECS:
        if spec.table.name in part.plain:
            cols = spec.columns
            source = p.unnest(f"+{spec.table.name}", cols, spec.pg_types(cols), "u")
            ctes.append(f"INSERT INTO {spec.table.name} ({', '.join(cols)}) SELECT * FROM {source}")
    guard = "TRUE"
    if part.fences:
        ctes.extend(_fence_ctes(p, part.finish))
        selects.insert(0, "SELECT id, owner{notify} FROM l")
        guard = "(u.rid, u.owner) IN (SELECT id, owner FROM l)"
    for spec in ROW_SPECS:
        if spec.table.name in part.guarded:
            cols = spec.value_columns
            ctes.append(_guarded_insert(p, spec.table.name, cols, spec.pg_types(cols), guard))
    if part.webhooks:
        ctes.extend(_webhook_ctes(p, guard))
    ctes.extend(_delete_ctes(p, part, guard))
    # A CTE of its own name (`r`, `w`, `l`, `f`) is referred to; the others are numbered.
    named = [c if c[:5] in _NAMED else f"c{i} AS (\n    {c}\n)" for i, c in enumerate(ctes)]
    final = "\nUNION ALL ".join(selects) if selects else "SELECT NULL AS id, NULL AS owner WHERE FALSE"
    text = "WITH " + ",\n".join(named) + "\n" + final if named else final
    return PgStatement.of(text, p)


_NAMED = frozenset({"r AS ", "w AS ", "l AS ", "f AS "})


def _creation_ctes(p: Params, inputs_json: bool) -> list[str]:
    rs, ins = _sql.RESPONSES, _sql.INPUTS
    responses = p.unnest("+responses", rs.columns, rs.pg_types(rs.columns), "u")
    if inputs_json:
        picks = ", ".join(
            f"u->>{i}" if ty == "text" else f"(u->>{i})::{ty}"
            for i, ty in enumerate(ins.pg_types(ins.columns))
        )
        inputs = f"SELECT {picks} FROM json_array_elements({p.take('+input_items.json', 'json')}) AS u"
    else:
        inputs = f"SELECT * FROM {p.unnest('+input_items', ins.columns, ins.pg_types(ins.columns), 'u')}"
    return [
        f"r AS (\n    INSERT INTO responses ({', '.join(rs.columns)})\n    SELECT * FROM {responses}\n"
        "    RETURNING id\n)",
        f"INSERT INTO input_items ({', '.join(ins.columns)})\n    {inputs}",
    ]


def _fence_ctes(p: Params, finish: bool) -> list[str]:
    cols = [(n, ty) for n, ty, _ in _FENCE] + (list(_FINISH) if finish else [])
    names = [n for n, _ in cols]
    source = p.unnest("fence", names, [ty for _, ty in cols], "w")
    # The lease is renewed only once a third of it is gone (`w.below`).
    renew = "r.lease_expires_at IS NULL OR r.lease_expires_at < w.below"
    changes = " OR ".join(
        f"w.{n} IS NOT NULL" for n in ("status", "usage", "journal", *(["fin_status"] if finish else []))
    )
    picks = ", ".join(f"w.{n}" for n in names[4:])
    sets = {
        "lease_expires_at": "l.until",
        "status": "COALESCE(l.status, r.status)",
        "usage": "COALESCE(l.usage, r.usage)",
        "journal": "COALESCE(l.journal, r.journal)",
    }
    if finish:
        # The terminal transition: its columns, and the lease cleared (a statement may not
        # update a row twice, so the fence and the end are one UPDATE).
        ended = "l.fin_status IS NOT NULL"
        sets["lease_expires_at"] = f"CASE WHEN {ended} THEN NULL ELSE l.until END"
        sets["lease_owner"] = f"CASE WHEN {ended} THEN NULL ELSE r.lease_owner END"
        for c in _sql.FINISH_COLUMNS:
            sets[c] = f"CASE WHEN {ended} THEN l.fin_{c} ELSE {sets.get(c, f'r.{c}')} END"
    assignments = ", ".join(f"{c} = {v}" for c, v in sets.items())
    return [
        f"w AS (\n    SELECT * FROM {source}\n)",
        # The batch's rows are locked in id order, the order a lease renewal and every other
        # batch lock them in: an UPDATE's join visits them in the plan's order, and a renewal
        # waiting on one of them while holding another would deadlock with it (PostgreSQL
        # breaks it after `deadlock_timeout`, 1 s in which every stream of the batch stands
        # still). Each row comes with what the UPDATE below sets, so that UPDATE waits for no
        # row and joins nothing more. `stale`: the write changes the row; a fresh lease is only
        # locked and checked (rewriting the row at every batch of a live stream cost ~40% of
        # the database's CPU per batch), and kept, so the UPDATE changes no indexed column (HOT).
        "l AS MATERIALIZED (\n    SELECT r.id, w.owner,"
        f" CASE WHEN {renew} THEN w.until ELSE r.lease_expires_at END AS until, {picks},"
        f" ({renew} OR {changes}) AS stale\n"
        "    FROM responses AS r JOIN w ON r.id = w.id AND r.lease_owner = w.owner"
        " ORDER BY r.id FOR UPDATE OF r\n)",
        f"f AS (\n    UPDATE responses AS r SET {assignments}\n    FROM l WHERE r.id = l.id AND l.stale\n)",
    ]


def _guarded_insert(p: Params, table: str, columns: Sequence[str], types: Sequence[str], guard: str) -> str:
    """Rows of `table` carrying their (response, owner) before the `columns` they insert
    (`response_id` is `rid` when the rows do not carry it), inserted only where `guard` holds."""
    names = ["rid", "owner", *columns]
    source = p.unnest(table, names, [pg_type(_r.id), pg_type(_r.lease_owner), *types], "u")
    keyed = "response_id" not in columns and "response_id" in t.metadata.tables[table].c
    into = ", ".join(["response_id", *columns] if keyed else columns)
    picks = ", ".join(["u.rid", *(f"u.{c}" for c in columns)] if keyed else (f"u.{c}" for c in columns))
    return f"INSERT INTO {table} ({into})\n    SELECT {picks}\n    FROM {source}\n    WHERE {guard}"


def _webhook_ctes(p: Params, guard: str) -> list[str]:
    ev, dl = t.webhook_events.c, t.webhook_deliveries.c
    return [
        _guarded_insert(p, "webhook_events", _HOOK_EVENTS, [pg_type(ev[c]) for c in _HOOK_EVENTS], guard),
        _guarded_insert(
            p, "webhook_deliveries", _HOOK_DELIVERIES, [pg_type(dl[c]) for c in _HOOK_DELIVERIES], guard
        ),
    ]


def _delete_ctes(p: Params, part: Part, guard: str) -> list[str]:
    rid, owner = pg_type(_r.id), pg_type(_r.lease_owner)
    ck, jc = t.checkpoints.c, t.journal.c
    out = []
    if part.prune:
        source = p.unnest(
            "prune",
            ["rid", "owner", "usr", "lineage"],
            [rid, owner, pg_type(ck.user_id), pg_type(ck.lineage)],
            "u",
        )
        cond = _sql.prune_condition("checkpoints", "u.rid", "u.usr", "u.lineage")
        out.append(f"DELETE FROM checkpoints USING {source}\n    WHERE {guard} AND {cond}")
    if part.keep:
        source = p.unnest("keep", ["rid", "owner", "keep"], [rid, owner, pg_type(jc.checkpoint_id)], "u")
        out.append(
            f"DELETE FROM journal USING {source}\n"
            f"    WHERE {guard} AND journal.response_id = u.rid AND journal.checkpoint_id <> u.keep"
        )
    if part.clear:
        source = p.unnest("clear", ["rid", "owner"], [rid, owner], "u")
        out.append(f"DELETE FROM journal USING {source}\n    WHERE {guard} AND journal.response_id = u.rid")
    return out


# -- arguments -------------------------------------------------------------------------------


def arguments(part: Part, batch: Batch, lost: set[tuple[str, str]]) -> list[Any]:
    """`statement(part)`'s arguments for `batch`, bound by name (pure CPU: may run in a
    thread). `lost`: the pairs an earlier statement of the batch fenced off."""
    st = statement(part)
    values: dict[str, Any] = {}
    if part.answers or part.claims:
        return _pg_takes.arguments(part.answers, batch)
    if part.creations:
        _creation_values(values, batch, part.inputs_json)
    for spec in ROW_SPECS:
        if spec.table.name in part.plain:
            _put(values, f"+{spec.table.name}", spec.columns, spec.rows(batch.unowned))
        if spec.table.name in part.guarded:
            _put(
                values, spec.table.name, ("rid", "owner", *spec.value_columns), spec.guarded_rows(batch.owned)
            )
    if part.fences:
        _fence_values(values, batch.fences, part.finish)
    if part.webhooks:
        _webhook_values(values, batch.owned, batch.now)
    fences = [f for f in batch.fences if f.key not in lost]
    if part.prune:
        pruned = [f for f in fences if f.prune is not None]
        _put_rows(
            values, "prune", ("rid", "owner", "usr", "lineage"), [_delete_row(f, f.prune) for f in pruned]
        )
    if part.keep:
        kept = [f for f in fences if f.journal_keep is not None]
        _put_rows(
            values,
            "keep",
            ("rid", "owner", "keep"),
            [{**_delete_row(f), "keep": f.journal_keep} for f in kept],
        )
    if part.clear:
        _put_rows(values, "clear", ("rid", "owner"), [_delete_row(f) for f in fences if f.journal_clear])
    return st.bind(values)


def _put(values: dict[str, Any], prefix: str, names: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
    values.update(zip(_keys(prefix, tuple(names)), _sql.columns(rows, len(names)), strict=True))


@functools.lru_cache(maxsize=64)
def _keys(prefix: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The parameter names of `prefix`'s columns (`Params.unnest`)."""
    return tuple(f"{prefix}.{n}" for n in names)


def _creation_values(values: dict[str, Any], batch: Batch, inputs_json: bool) -> None:
    responses, inputs = [], []
    for w in batch.creations:
        assert w.create is not None
        row, input_rows = w.create
        responses.append(_sql.RESPONSES.values(row))
        inputs.extend(_sql.INPUTS.keyed_rows(row.id, input_rows))
    _put(values, "+responses", _sql.RESPONSES.columns, responses)
    if inputs_json:
        values["+input_items.json"] = orjson.dumps(inputs).decode()
    else:
        _put(values, "+input_items", _sql.INPUTS.columns, inputs)


def _put_rows(
    values: dict[str, Any], prefix: str, names: Sequence[str], rows: Sequence[dict[str, Any]]
) -> None:
    """Rows given by column name, as `prefix`'s column arrays."""
    for name in names:
        values[f"{prefix}.{name}"] = [r[name] for r in rows]


def _delete_row(f: Fence, prune: tuple[str, str | None] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"rid": f.response_id, "owner": f.owner}
    if prune is not None:
        row["usr"], row["lineage"] = prune
    return row


def _fence_values(values: dict[str, Any], fences: Sequence[Fence], finish: bool) -> None:
    for name, _, attr in _FENCE:
        values[f"fence.{name}"] = [getattr(f, attr) for f in fences]
    if finish:
        for column in _sql.FINISH_COLUMNS:
            values[f"fence.fin_{column}"] = [getattr(f.finish, column, None) for f in fences]


def _webhook_values(values: dict[str, Any], writes: Sequence[Write], now: float) -> None:
    events: list[dict[str, Any]] = []
    deliveries: list[dict[str, Any]] = []
    for w in writes:
        for e in w.webhooks:
            key = {"rid": w.response_id, "owner": w.owner}
            events.append({**key, **_sql.webhook_event_row(e)})
            deliveries.extend({**key, **row} for row in _sql.webhook_delivery_rows(e, now))
    _put_rows(values, "webhook_events", ("rid", "owner", *_HOOK_EVENTS), events)
    _put_rows(values, "webhook_deliveries", ("rid", "owner", *_HOOK_DELIVERIES), deliveries)
