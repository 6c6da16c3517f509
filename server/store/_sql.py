"""Rows and statement text of the outbox's writers, generated from the table metadata (`_tables`).

Job: the one place that knows which record field goes to which column, in which order, with
which PostgreSQL array type; the writers (`_pg_writer`, `_sqlite_writer`) and the general path
(`_plan`) take their column lists, row tuples, `unnest` casts and parameter numbers from here.

Invariant: nothing lists a column or numbers a parameter by hand. A column added to a table
(and the field to its record) reaches every statement, its parameters and its rows at once;
a column without a record field (or the reverse) fails at import, not as a misnumbered
parameter (which once sent every batch quietly to the slow path).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

from sqlalchemy import BigInteger, Boolean, Column, Float, Integer, String, Table, Text

from . import _tables as t
from .records import (
    CheckpointRow,
    EventRow,
    Finish,
    InputItemRow,
    JournalRow,
    OutputItemRow,
    PendingRequestRow,
    ResponseRow,
)

# -- rows --------------------------------------------------------------------------------------


def _insert_columns(table: Table) -> tuple[Column[Any], ...]:
    """Every column an INSERT names: all but a key the database assigns (`checkpoints.seq`)."""
    return tuple(c for c in table.columns if not (c.primary_key and c.autoincrement is True))


def _compile(source: str) -> Any:
    """A row builder from its source, which `_builders` writes from column names alone (checked
    identifiers): as fast as a hand-written comprehension, which a generic `attrgetter` plus
    tuple unpacking is not (~1.8x slower for a 1000-event batch, measured)."""
    return eval(source, {"__builtins__": {}})


@dataclass(frozen=True)
class RowSpec:
    """How one kind of record becomes a row of `table`.

    `keyed`: the record has no `response_id` field; the row takes it from its `Write` (or its
    creation). `value_columns`: every column but that key. The builders, generated from the
    column names:
    - `values(record)`: the record's values for `value_columns`;
    - `mapping(response_id, record)`: the row by column name (SQLAlchemy's executemany);
    - `keyed_rows(response_id, records)`: rows in `columns` order for one response's records;
    - `rows(writes)` / `guarded_rows(writes)`: the rows of `over` (a `Write` field) of every write,
      in `columns` order / as (response id, owner, *values) for a fenced statement.
    """

    table: Table
    columns: tuple[str, ...]
    value_columns: tuple[str, ...]
    keyed: bool
    over: str
    values: Callable[[Any], tuple[Any, ...]]
    mapping: Callable[[str, Any], dict[str, Any]]
    keyed_rows: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
    rows: Callable[[Sequence[Any]], list[tuple[Any, ...]]]
    guarded_rows: Callable[[Sequence[Any]], list[tuple[Any, ...]]]

    def pg_types(self, names: Iterable[str]) -> list[str]:
        return [pg_type(self.table.c[n]) for n in names]


def _builders(value_columns: tuple[str, ...], keyed: bool, over: str, many: bool) -> dict[str, Any]:
    for name in (*value_columns, over):
        if not name.isidentifier():
            raise TypeError(f"{name!r} is not an identifier")
    vals = ", ".join(f"r.{c}" for c in value_columns)
    key = "rid, " if keyed else ""
    entries = ", ".join(
        [*(["'response_id': rid"] if keyed else []), *(f"{c!r}: r.{c}" for c in value_columns)]
    )
    # `over` is a list of records (`many`: events, items) or one optional record (checkpoint).
    each = f"for w in writes for r in w.{over}" if many else f"for w in writes if (r := w.{over}) is not None"
    wkey = "w.response_id, " if keyed else ""
    return {
        "values": _compile(f"lambda r: ({vals},)"),
        "mapping": _compile(f"lambda rid, r: {{{entries}}}"),
        "keyed_rows": _compile(f"lambda rid, records: [({key}{vals}) for r in records]"),
        "rows": _compile(f"lambda writes: [({wkey}{vals}) {each}]"),
        "guarded_rows": _compile(f"lambda writes: [(w.response_id, w.owner, {vals}) {each}]"),
    }


def _spec(
    table: Table,
    record: type[Any],
    *,
    over: str = "none",
    many: bool = True,
    extra: frozenset[str] = frozenset(),
) -> RowSpec:
    columns = tuple(c.name for c in _insert_columns(table))
    names = set(getattr(record, "_fields", ())) or {f.name for f in fields(record)}
    names -= extra
    keyed = "response_id" in columns and "response_id" not in names
    value_columns = tuple(c for c in columns if not (keyed and c == "response_id"))
    if set(value_columns) != names:
        raise TypeError(
            f"{record.__name__} and table {table.name} disagree: fields without a column "
            f"{sorted(names - set(value_columns))}, "
            f"columns without a field {sorted(set(value_columns) - names)}"
        )
    return RowSpec(table, columns, value_columns, keyed, over, **_builders(value_columns, keyed, over, many))


RESPONSES = _spec(t.responses, ResponseRow)
INPUTS = _spec(t.input_items, InputItemRow)
EVENTS = _spec(t.events, EventRow, over="events")
ITEMS = _spec(t.output_items, OutputItemRow, over="items")
CHECKPOINTS = _spec(t.checkpoints, CheckpointRow, over="checkpoint", many=False, extra=frozenset({"seq"}))
PENDING = _spec(t.pending_requests, PendingRequestRow, over="pending")
JOURNAL = _spec(t.journal, JournalRow, over="journal", extra=frozenset({"seq"}))

# -- reads -------------------------------------------------------------------------------------

if EVENTS.value_columns != EventRow._fields:
    raise TypeError(f"events' columns {EVENTS.value_columns} are not EventRow's fields {EventRow._fields}")
_E = t.events.c


def _read_events(marks: tuple[str, str, str, str]) -> str:
    return (
        f"SELECT {', '.join(EVENTS.value_columns)} FROM {t.events.name} "
        f"WHERE {_E.response_id.name} = {marks[0]} AND {_E.seq.name} > {marks[1]} "
        f"AND {_E.seq.name} <= {marks[2]} ORDER BY {_E.seq.name} LIMIT {marks[3]}"
    )


# A page of a response's events (`Store.read_events`): the parameters are (response id, after,
# up to, limit), each row an `EventRow`'s fields in order. For each driver, and for SQLAlchemy
# (named: behind a transaction pooler, which needs the transaction SQLAlchemy keeps).
READ_EVENTS_PG = _read_events(("$1", "$2", "$3", "$4"))
READ_EVENTS_SQLITE = _read_events(("?", "?", "?", "?"))
READ_EVENTS_NAMED = _read_events((":rid", ":after", ":upper", ":limit"))


# A response's end sets these columns of its row (and clears its lease).
FINISH_COLUMNS = tuple(f.name for f in fields(Finish))
if not set(FINISH_COLUMNS) <= set(t.responses.c.keys()):
    raise TypeError(f"Finish fields {FINISH_COLUMNS} are not all columns of responses")
finish_values = attrgetter(*FINISH_COLUMNS)


def columns(rows: Sequence[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows as `width` column arrays (for `unnest`)."""
    return [list(col) for col in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]


# -- PostgreSQL ----------------------------------------------------------------------------------

_PG_TYPES: tuple[tuple[type[Any], str], ...] = (
    (BigInteger, "int8"),  # before Integer: BigInteger is one
    (Integer, "int4"),
    (Float, "float8"),
    (Boolean, "bool"),
    (Text, "text"),
    (String, "text"),
)


def pg_type(column: Column[Any]) -> str:
    for cls, name in _PG_TYPES:
        if isinstance(column.type, cls):
            return name
    raise TypeError(f"no PostgreSQL array type for {column.table.name}.{column.name} ({column.type!r})")


class Params:
    """Numbers a statement's parameters in the order the text asks for them; an array parameter
    is written as a marker that `PgStatement.of` turns into each of its two forms.

    Plain form: an array of any type but text is sent as text and cast by the server
    (`$1::text[]::int4[]`): asyncpg knows no array codec but text's and oid's, and a new
    connection's first statement with an `int4[]` parameter looks the type up first (3 queries
    more: over a 100 ms round trip the first write after a reconnect took 0.8 s instead of 0.2).

    Packed form: the array is one text, its elements joined by a newline (`pack`), split by the
    server (`string_to_array`). asyncpg encodes an array element by element on the event loop,
    with two abstract-class checks per element: a fifth of the loop's time in a 1000-output
    superstep on PostgreSQL. A join is one C call, and the server's split is no dearer than
    decoding an array."""

    def __init__(self) -> None:
        self.count = 0
        self.arrays: list[tuple[int, str]] = []  # (0-based position, cast) of each array

    def take(self, cast: str) -> str:
        self.count += 1
        if cast.endswith("[]"):
            self.arrays.append((self.count - 1, cast))
            return f"@@{self.count}@@"
        return f"${self.count}::{cast}"

    def unnest(self, names: Sequence[str], types: Sequence[str], alias: str) -> str:
        arrays = ", ".join(self.take(f"{ty}[]") for ty in types)
        return f"unnest({arrays}) AS {alias}({', '.join(names)})"


# A packed array's separator, and the element that stands for NULL. Neither occurs in what the
# tables hold (compact JSON escapes control characters; ids and types are printable), and
# `pack` refuses an array where one would be read wrongly: the statement goes in plain form.
PACK_SEP = "\n"
PACK_NULL = "\x01"
_INTEGERS = frozenset({"int4[]", "int8[]"})


def _plain_array(n: int, cast: str) -> str:
    return f"${n}::text[]" if cast == "text[]" else f"${n}::text[]::{cast}"


def _packed_array(n: int, cast: str) -> str:
    # Every element follows a separator, so the first of the split is always empty and dropped:
    # a lone empty string stays one element (it would otherwise split into none).
    split = f"(string_to_array(${n}::text, E'\\n', E'\\x01'))[2:]"
    return split if cast == "text[]" else f"{split}::{cast}"


def pack(values: Sequence[Any], cast: str) -> str | None:
    """`values` as one text for `_packed_array`, each element after a separator; None when they
    cannot be told apart once joined (an element with a newline or the NULL mark)."""
    if not values:
        return ""
    nulls = values.count(None)
    texts: Sequence[Any]
    if cast == "text[]":
        texts = [PACK_NULL if v is None else v for v in values] if nulls else values
    elif cast in _INTEGERS and not nulls:
        texts = [str(v) for v in values]
    else:
        texts = [PACK_NULL if v is None else _pg_text(v) for v in values]
    try:
        joined = PACK_SEP + PACK_SEP.join(texts)
    except TypeError:
        return None  # not all text: the plain form's encoder says what is wrong
    if joined.count(PACK_SEP) != len(texts) or joined.count(PACK_NULL) != nulls:
        return None
    return joined


@dataclass(frozen=True)
class PgStatement:
    """Text with `{notify}` where the writer may add `pg_notify(...)` to the final SELECT, in
    the plain and the packed form of its arrays (`Params`), the number of parameters the text
    itself takes (notify's two follow them), and which of them are arrays."""

    text: str
    packed_text: str
    params: int
    arrays: tuple[tuple[int, str], ...] = ()

    @classmethod
    def of(cls, text: str, params: Params) -> PgStatement:
        plain, packed = text, text
        for i, cast in params.arrays:
            marker = f"@@{i + 1}@@"
            plain = plain.replace(marker, _plain_array(i + 1, cast))
            packed = packed.replace(marker, _packed_array(i + 1, cast))
        return cls(plain, packed, params.count, tuple(params.arrays))

    def render(self, notify: bool, *, packed: bool = False) -> str:
        extra = f", pg_notify(${self.params + 1}, ${self.params + 2} || id)" if notify else ""
        return (self.packed_text if packed else self.text).replace("{notify}", extra)

    def encode(self, args: list[Any]) -> list[Any]:
        """`args` for the plain form: the arrays sent as text in PostgreSQL's text form."""
        out = list(args)
        for i, cast in self.arrays:
            if cast != "text[]":
                out[i] = [None if v is None else _pg_text(v) for v in out[i]]
        return out

    def pack(self, args: list[Any]) -> list[Any] | None:
        """`args` for the packed form, or None when an array does not pack (`pack`)."""
        out = list(args)
        for i, cast in self.arrays:
            packed = pack(out[i], cast)
            if packed is None:
                return None
            out[i] = packed
        return out


def _pg_text(value: Any) -> str:
    if value is True:
        return "t"
    if value is False:
        return "f"
    return repr(value) if isinstance(value, float) else str(value)  # repr: exact, 'inf' included


_RID = pg_type(t.responses.c.id)
_OWNER = pg_type(t.responses.c.lease_owner)
# A superstep's fence rows: (response, owner, lease until, renew below, status change or NULL,
# usage or NULL).
FENCE_WIDTH = 6
# The tables a superstep writes to, in statement (and argument) order.
SUPERSTEP_SPECS = (EVENTS, ITEMS, CHECKPOINTS)


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
    those pairs."""
    p = Params()
    r = t.responses.c
    fence = p.unnest(
        ["id", "owner", "until", "below", "status", "usage"],
        [_RID, _OWNER, *[pg_type(r.lease_expires_at)] * 2, pg_type(r.status), pg_type(r.usage)],
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
        f" ({renew} OR w.status IS NOT NULL OR w.usage IS NOT NULL) AS stale\n"
        "    FROM responses AS r JOIN w ON r.id = w.id AND r.lease_owner = w.owner"
        " ORDER BY r.id FOR UPDATE OF r\n)",
        # A lease still fresh keeps its value, so the UPDATE changes no indexed column (HOT).
        "f AS (\n    UPDATE responses AS r SET lease_expires_at = l.until,"
        " status = COALESCE(l.status, r.status), usage = COALESCE(l.usage, r.usage)\n"
        "    FROM l WHERE r.id = l.id AND l.stale\n)",
    ]
    guard = "(u.rid, u.owner) IN (SELECT id, owner FROM l)"
    for i, spec in enumerate(SUPERSTEP_SPECS):
        ctes.append(_guarded_insert(f"i{i}", spec, p, "u.rid", guard, owner=True))
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


def prune_condition(table: str, response_id: str, user_id: str, lineage: str) -> str:
    """Which checkpoints a finished response prunes: those of the response and of its lineage
    (the user's), except the newest of each. Both newest rows survive: the lineage's newest may
    belong to another response, and this response's own newest is what a later
    `previous_response_id` continues from. A NULL lineage leaves the lineage's rows alone.

    The placeholders are the caller's (`:b_id` for SQLAlchemy, `$1` in a statement here)."""
    newest = "(SELECT coalesce(max(m.seq), -1) FROM checkpoints AS m WHERE m.user_id = {u} AND m.{k} = {v})"
    return (
        f"{table}.user_id = {user_id}"
        f" AND ({table}.response_id = {response_id} OR {table}.lineage = {lineage})"
        f" AND {table}.seq <> {newest.format(u=user_id, k='response_id', v=response_id)}"
        f" AND {table}.seq <> {newest.format(u=user_id, k='lineage', v=lineage)}"
    )


# The pruning of a finished response's old checkpoints with named parameters (each is used
# several times), which SQLAlchemy's `text()` (`_plan.prune_op`) and sqlite3 (`_sqlite_writer`)
# both take; `_plan.prune_params` gives them.
PRUNE = "DELETE FROM checkpoints WHERE " + prune_condition("checkpoints", ":b_id", ":b_user", ":b_lineage")


def end_statement() -> PgStatement:
    """A response's end: the fence and the terminal transition are one UPDATE (a statement may
    not update a row twice); the last events and closed items and the pruning of old
    checkpoints happen only if it matched. The prune sees the checkpoints committed before this
    statement, which a plain end never carries one of."""
    p = Params()
    r = t.responses.c
    rid, owner = p.take(_RID), p.take(_OWNER)
    sets = ", ".join(f"{c} = {p.take(pg_type(r[c]))}" for c in FINISH_COLUMNS)
    ctes = [
        f"f AS (\n    UPDATE responses\n    SET {sets}, lease_owner = NULL, lease_expires_at = NULL\n"
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
    return PgStatement.of("WITH " + ",\n".join(ctes) + "\nSELECT id{notify} FROM f", p)


# -- SQLite ---------------------------------------------------------------------------------------


def insert_head(spec: RowSpec) -> str:
    """`INSERT INTO table (columns)`: `_sqlite_writer.insert_rows` adds the VALUES lists."""
    return f"INSERT INTO {spec.table.name} ({', '.join(spec.columns)})"


# A write with nothing to change but a lease that is still fresh (`_plan.Fence.check_only`) only
# reads it: the database's write lock, held from BEGIN IMMEDIATE, serializes it with every
# takeover, and the response's row and lease index stay untouched.
# The lease of several responses at once (`_sqlite_writer.leases_of`: the IN list is added per
# chunk size).
SQLITE_LEASES_HEAD = "SELECT id, lease_owner, lease_expires_at FROM responses WHERE id IN "
SQLITE_FENCE = (
    "UPDATE responses SET lease_expires_at = ?, status = COALESCE(?, status), usage = COALESCE(?, usage) "
    "WHERE id = ? AND lease_owner = ?"
)
# A response's end (`_sqlite_writer.SqliteWriter._end`): the fence and the terminal transition in
# one UPDATE, as PostgreSQL's `end_statement` does.
SQLITE_END = (
    f"UPDATE responses SET {', '.join(f'{c} = ?' for c in FINISH_COLUMNS)}, "
    "lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND lease_owner = ?"
)
