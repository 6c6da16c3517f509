"""Rows and statement text of the outbox's writers, generated from the table metadata (`_tables`).

Job: the one place that knows which record field goes to which column, in which order, with
which PostgreSQL array type; the renderers (`_pg_render`, `_sqlite_render`) take their column
lists, row tuples and `unnest` casts from here, and bind PostgreSQL's numbered parameters by
name (`Params`, `PgStatement.bind`).

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

from sqlalchemy import BigInteger, Boolean, Column, Float, Integer, LargeBinary, String, Table, Text

from .. import _tables as t
from ..records import (
    CheckpointRow,
    Finish,
    InputItemRow,
    JournalRow,
    OutputItemRow,
    PendingRequestRow,
    ResponseRow,
    StoredEvents,
    WebhookEvent,
)
from . import _events

# -- rows --------------------------------------------------------------------------------------


def _insert_columns(table: Table) -> tuple[Column[Any], ...]:
    """Every column an INSERT names: all but a key the database assigns (`checkpoints.seq`)."""
    return tuple(c for c in table.columns if not (c.primary_key and c.autoincrement is True))


def _compile(source: str, encode: Callable[[Any], Any] | None = None) -> Any:
    """A row builder from its source, which `_builders` writes from column names alone (checked
    identifiers): as fast as a hand-written comprehension, which a generic `attrgetter` plus
    tuple unpacking is not (~1.8x slower for a 1000-event batch, measured)."""
    return eval(source, {"__builtins__": {}, "encode": encode})


@dataclass(frozen=True)
class RowSpec:
    """How one kind of record becomes a row of `table`.

    `keyed`: the record has no `response_id` field; the row takes it from its `Write` (or its
    creation). `encode`: the write's records (`over`) become the rows' records through it (a
    write's events are stored as runs, `_events.encode`). `value_columns`: every column but
    that key. The builders, generated from the column names:
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


def _builders(
    value_columns: tuple[str, ...], keyed: bool, over: str, many: bool, encode: Callable[[Any], Any] | None
) -> dict[str, Any]:
    for name in (*value_columns, over):
        if not name.isidentifier():
            raise TypeError(f"{name!r} is not an identifier")
    vals = ", ".join(f"r.{c}" for c in value_columns)
    key = "rid, " if keyed else ""
    entries = ", ".join(
        [*(["'response_id': rid"] if keyed else []), *(f"{c!r}: r.{c}" for c in value_columns)]
    )
    # `over` is a list of records (`many`: events, items) or one optional record (checkpoint).
    source = f"encode(w.{over})" if encode is not None else f"w.{over}"
    each = f"for w in writes for r in {source}" if many else f"for w in writes if (r := w.{over}) is not None"
    wkey = "w.response_id, " if keyed else ""
    return {
        "values": _compile(f"lambda r: ({vals},)"),
        "mapping": _compile(f"lambda rid, r: {{{entries}}}"),
        "keyed_rows": _compile(f"lambda rid, records: [({key}{vals}) for r in records]"),
        "rows": _compile(f"lambda writes: [({wkey}{vals}) {each}]", encode),
        "guarded_rows": _compile(f"lambda writes: [(w.response_id, w.owner, {vals}) {each}]", encode),
    }


def _spec(
    table: Table,
    record: type[Any],
    *,
    over: str = "none",
    many: bool = True,
    extra: frozenset[str] = frozenset(),
    encode: Callable[[Any], Any] | None = None,
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
    builders = _builders(value_columns, keyed, over, many, encode)
    return RowSpec(table, columns, value_columns, keyed, over, **builders)


RESPONSES = _spec(t.responses, ResponseRow)
INPUTS = _spec(t.input_items, InputItemRow)
EVENTS = _spec(t.events, StoredEvents, over="events", encode=_events.encode)
ITEMS = _spec(t.output_items, OutputItemRow, over="items")
CHECKPOINTS = _spec(t.checkpoints, CheckpointRow, over="checkpoint", many=False, extra=frozenset({"seq"}))
PENDING = _spec(t.pending_requests, PendingRequestRow, over="pending")
JOURNAL = _spec(t.journal, JournalRow, over="journal", extra=frozenset({"seq"}))

# A webhook event's row, and each of its deliveries' (the others columns take their defaults):
# by column name, so the renderers take them in their own column order.
WEBHOOK_EVENT_COLUMNS = tuple(c.name for c in t.webhook_events.columns)
_WEBHOOK_EVENT_FIELDS = {"id": "event_id"}  # column -> `WebhookEvent` field where they differ
WEBHOOK_DELIVERY_COLUMNS = tuple(
    c.name
    for c in t.webhook_deliveries.columns
    if c.name in {"event_id", "endpoint", "status", "attempts", "next_attempt_at"}
)


def webhook_event_row(event: WebhookEvent) -> dict[str, Any]:
    return {c: getattr(event, _WEBHOOK_EVENT_FIELDS.get(c, c)) for c in WEBHOOK_EVENT_COLUMNS}


def webhook_delivery_rows(event: WebhookEvent, now: float) -> list[dict[str, Any]]:
    """One delivery per endpoint, due at once."""
    return [
        {
            "event_id": event.event_id,
            "endpoint": url,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
        }
        for url in event.endpoints
    ]


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
    (LargeBinary, "bytea"),
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
        self.names: list[str] = []  # each parameter's name, in number order
        self.arrays: list[tuple[int, str]] = []  # (0-based position, cast) of each array

    @property
    def count(self) -> int:
        return len(self.names)

    def take(self, name: str, cast: str) -> str:
        """The placeholder of the parameter `name` (numbered once, however often it is used)."""
        if name in self.names:
            raise ValueError(f"parameter {name!r} taken twice")
        self.names.append(name)
        if cast.endswith("[]"):
            self.arrays.append((self.count - 1, cast))
            return f"@@{self.count}@@"
        return f"${self.count}::{cast}"

    def unnest(self, prefix: str, names: Sequence[str], types: Sequence[str], alias: str) -> str:
        """`unnest` of one array per column, the parameters named `prefix.column`."""
        arrays = ", ".join(self.take(f"{prefix}.{n}", f"{ty}[]") for n, ty in zip(names, types, strict=True))
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
    names: tuple[str, ...]
    arrays: tuple[tuple[int, str], ...] = ()

    @classmethod
    def of(cls, text: str, params: Params) -> PgStatement:
        plain, packed = text, text
        for i, cast in params.arrays:
            marker = f"@@{i + 1}@@"
            plain = plain.replace(marker, _plain_array(i + 1, cast))
            packed = packed.replace(marker, _packed_array(i + 1, cast))
        return cls(plain, packed, tuple(params.names), tuple(params.arrays))

    @property
    def params(self) -> int:
        return len(self.names)

    def bind(self, values: dict[str, Any]) -> list[Any]:
        """The arguments in the text's order, taken by name from `values` (a name the
        statement takes and `values` lacks is a KeyError, never a shifted argument)."""
        return [values[n] for n in self.names]

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
    if isinstance(value, bytes):
        return "\\x" + value.hex()  # bytea's hex input form
    if value is True:
        return "t"
    if value is False:
        return "f"
    return repr(value) if isinstance(value, float) else str(value)  # repr: exact, 'inf' included


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
# several times), which SQLAlchemy's `text()` (`Checkpoints.prune_checkpoints`) and sqlite3
# (`_sqlite_render`) both take.
PRUNE = "DELETE FROM checkpoints WHERE " + prune_condition("checkpoints", ":b_id", ":b_user", ":b_lineage")
