"""PostgreSQL's fast-path statements (`_pg_writer`): a batch of superstep writes, of plain
creations, a plain end, each one statement of data-modifying CTEs over `unnest`ed arrays.

Job: write their text and number their parameters from `_sql`'s row specs and `Params`, so the
writer's arguments (`_pg_writer`) follow the order the text takes them in; no column is listed
by hand (`_sql`'s invariant).
"""

from __future__ import annotations

from . import _tables as t
from ._sql import (
    CHECKPOINTS,
    EVENTS,
    FINISH_COLUMNS,
    INPUTS,
    ITEMS,
    JOURNAL,
    RESPONSES,
    Params,
    PgStatement,
    RowSpec,
    pg_type,
    prune_condition,
)

_RID = pg_type(t.responses.c.id)
_OWNER = pg_type(t.responses.c.lease_owner)
# A superstep's fence rows: (response, owner, lease until, renew below, status change or NULL,
# usage or NULL, journal counts or NULL).
FENCE_WIDTH = 7
# The tables a superstep writes to, in statement (and argument) order (the journal's rows are
# `_plan.journal_rows`, not `JOURNAL.guarded_rows`); then the journal's keeps
# (`_plan.journal_keeps`: response, owner, checkpoint kept).
SUPERSTEP_SPECS = (EVENTS, ITEMS, CHECKPOINTS, JOURNAL)


def _guarded_insert(name: str, spec: RowSpec, params: Params, key: str, guard: str, *, owner: bool) -> str:
    """A CTE inserting `spec` rows from unnested arrays, only where `guard` holds.

    The arrays are (response id, owner,) then the spec's value columns when `owner`, else
    the value columns alone with `key` as every row's response id.
    """
    names = list(spec.value_columns)
    types = spec.pg_types(names)
    if owner:
        names, types = ["rid", "owner", *names], [_RID, _OWNER, *types]
    source = params.unnest(names, types, "u")
    select = ", ".join(key if (spec.keyed and c == "response_id") else f"u.{c}" for c in spec.columns)
    return (
        f"{name} AS (\n    INSERT INTO {spec.table.name} ({', '.join(spec.columns)})\n"
        f"    SELECT {select}\n    FROM {source}\n    WHERE {guard}\n)"
    )


def superstep_statement() -> PgStatement:
    """Fences (lease renewal, status change) and the rows of a batch of superstep writes, as
    data-modifying CTEs of one statement; rows insert only for the (response, owner) pairs whose
    fence matched (the owner holds the row, locked until commit), and the statement returns
    those pairs.

    Journal records insert like the other rows; a checkpoint's `journal_keep` deletes the
    response's records of every other checkpoint. The DELETE sees the rows committed before
    the statement, not those the statement inserts: the caller leaves out the records a keep of
    the same batch supersedes (`_plan.journal_rows`), which the general path deletes after
    inserting them."""
    p = Params()
    r = t.responses.c
    fence = p.unnest(
        ["id", "owner", "until", "below", "status", "usage", "journal"],
        [
            _RID,
            _OWNER,
            *[pg_type(r.lease_expires_at)] * 2,
            pg_type(r.status),
            pg_type(r.usage),
            pg_type(r.journal),
        ],
        "w",
    )
    # The lease is renewed only once a third of it is gone (`w.below`).
    renew = "r.lease_expires_at IS NULL OR r.lease_expires_at < w.below"
    ctes = [
        f"w AS (\n    SELECT * FROM {fence}\n)",
        # The batch's rows are locked in id order, the order a lease renewal and a batch of
        # ends lock them in: an UPDATE's join visits them in the plan's order (a hash join: the
        # table's), and a renewal waiting on one of them while holding another would deadlock
        # with it; PostgreSQL breaks a deadlock after `deadlock_timeout` (1 s), a second in
        # which every stream of the batch stands still. Each row
        # comes with what the UPDATE below sets, so that UPDATE waits for no row and joins
        # nothing more.
        # `stale`: the write changes the row (a lease to renew, a status, a usage). A fresh
        # lease is only locked and checked, as on SQLite: rewriting the row at every batch of a
        # live stream (a row version, its WAL, a dead tuple per response) would cost ~40% of
        # the database's CPU per batch.
        "l AS MATERIALIZED (\n    SELECT r.id, w.owner,"
        f" CASE WHEN {renew} THEN w.until ELSE r.lease_expires_at END AS until, w.status, w.usage,"
        " w.journal,"
        f" ({renew} OR w.status IS NOT NULL OR w.usage IS NOT NULL OR w.journal IS NOT NULL) AS stale\n"
        "    FROM responses AS r JOIN w ON r.id = w.id AND r.lease_owner = w.owner"
        " ORDER BY r.id FOR UPDATE OF r\n)",
        # A lease still fresh keeps its value, so the UPDATE changes no indexed column (HOT).
        "f AS (\n    UPDATE responses AS r SET lease_expires_at = l.until,"
        " status = COALESCE(l.status, r.status), usage = COALESCE(l.usage, r.usage),"
        " journal = COALESCE(l.journal, r.journal)\n"
        "    FROM l WHERE r.id = l.id AND l.stale\n)",
    ]
    guard = "(u.rid, u.owner) IN (SELECT id, owner FROM l)"
    for i, spec in enumerate(SUPERSTEP_SPECS):
        ctes.append(_guarded_insert(f"i{i}", spec, p, "u.rid", guard, owner=True))
    keep = p.unnest(["rid", "owner", "keep"], [_RID, _OWNER, pg_type(t.journal.c.checkpoint_id)], "u")
    ctes.append(
        f"jk AS (\n    DELETE FROM journal AS j USING {keep}\n"
        f"    WHERE j.response_id = u.rid AND j.checkpoint_id <> u.keep AND {guard}\n)"
    )
    return PgStatement.of("WITH " + ",\n".join(ctes) + "\nSELECT id, owner{notify} FROM l", p)


CREATION_SPECS = (RESPONSES, INPUTS, EVENTS)


def creation_statement(*, inputs_as_json: bool) -> PgStatement:
    """Plain creations of a batch (response rows, input items, first events) in one statement.

    inputs_as_json: the input items come as one JSON array of rows (`INPUTS.columns` order)
    instead of one array per column.
    """
    p = Params()

    def plain(spec: RowSpec) -> str:
        return p.unnest(spec.columns, spec.pg_types(spec.columns), "u")

    # Parameters in argument order: responses, input items, events (`CREATION_SPECS`).
    responses = f"SELECT * FROM {plain(RESPONSES)}"
    if inputs_as_json:
        picks = ", ".join(
            f"u->>{i}" if ty == "text" else f"(u->>{i})::{ty}"
            for i, ty in enumerate(INPUTS.pg_types(INPUTS.columns))
        )
        inputs = f"SELECT {picks} FROM json_array_elements({p.take('json')}) AS u"
    else:
        inputs = f"SELECT * FROM {plain(INPUTS)}"
    events = f"SELECT * FROM {plain(EVENTS)}"
    text = (
        f"WITH r AS (\n    INSERT INTO responses ({', '.join(RESPONSES.columns)})\n    {responses}\n"
        "    RETURNING id\n), i AS (\n"
        f"    INSERT INTO input_items ({', '.join(INPUTS.columns)})\n    {inputs}\n), e AS (\n"
        f"    INSERT INTO events ({', '.join(EVENTS.columns)})\n    {events}\n)\n"
        "SELECT id{notify} FROM r"
    )
    return PgStatement.of(text, p)


def end_statement() -> PgStatement:
    """A response's end: the fence and the terminal transition are one UPDATE (a statement may
    not update a row twice); the last events and closed items and the pruning of old
    checkpoints happen only if it matched. The prune sees the checkpoints committed before this
    statement, which a plain end never carries one of; so does the deletion of the journal's
    records (`journal_clear`), which a plain end inserts none of."""
    p = Params()
    r = t.responses.c
    rid, owner = p.take(_RID), p.take(_OWNER)
    sets = ", ".join(f"{c} = {p.take(pg_type(r[c]))}" for c in FINISH_COLUMNS)
    counts = p.take(pg_type(r.journal))
    ctes = [
        f"f AS (\n    UPDATE responses\n    SET {sets}, journal = COALESCE({counts}, journal),"
        " lease_owner = NULL, lease_expires_at = NULL\n"
        f"    WHERE id = {rid} AND lease_owner = {owner}\n    RETURNING id\n)"
    ]
    matched = "EXISTS (SELECT 1 FROM f)"
    ctes.append(_guarded_insert("ev", EVENTS, p, rid, matched, owner=False))
    ctes.append(_guarded_insert("it", ITEMS, p, rid, matched, owner=False))
    c = t.checkpoints.c
    wanted, user, lineage = p.take("bool"), p.take(pg_type(c.user_id)), p.take(pg_type(c.lineage))
    ctes.append(
        f"pr AS (\n    DELETE FROM checkpoints\n    WHERE {wanted} AND {matched}\n"
        f"        AND {prune_condition('checkpoints', rid, user, lineage)}\n)"
    )
    clear = p.take("bool")
    ctes.append(f"jc AS (\n    DELETE FROM journal WHERE {clear} AND {matched} AND response_id = {rid}\n)")
    return PgStatement.of("WITH " + ",\n".join(ctes) + "\nSELECT id{notify} FROM f", p)
