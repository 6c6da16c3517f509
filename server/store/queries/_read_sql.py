"""The store's reads' statements (`Query`: one text per driver, and SQLAlchemy's for reads behind
a transaction pooler), generated from the table metadata like the writers' (`write/_sql`):
nothing lists a column or numbers a parameter by hand, and a column without its record field
(or the reverse) fails at import.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from sqlalchemy import Boolean

from .. import _tables as t
from .._base import Query
from ..records import OutputItemRow, ResponseRow, StoredEvents
from ..write import _sql

if _sql.EVENTS.value_columns != StoredEvents._fields:
    raise TypeError(
        f"events' columns {_sql.EVENTS.value_columns} are not StoredEvents' {StoredEvents._fields}"
    )
_E = t.events.c


def _read_events(marks: tuple[str, ...]) -> str:
    return (
        f"SELECT {', '.join(_sql.EVENTS.value_columns)} FROM {t.events.name} "
        f"WHERE {_E.response_id.name} = {marks[0]} AND {_E.seq.name} > {marks[1]} "
        f"AND {_E.seq.name} <= {marks[2]} ORDER BY {_E.seq.name} LIMIT {marks[3]}"
    )


# The rows of a page of a response's events (`Store.read_events`): the parameters are
# (response id, after, the last row's bound, limit), each row a `StoredEvents`' fields in
# order (`_events.decode` makes the events).
READ_EVENTS = Query.of(_read_events, 4)

# A response's row by id (`ResponseReads.get_response`), scoped to a user or not: its columns in
# the order of `ResponseRow`'s fields, which they fill.
RESPONSE_COLUMNS = tuple(f.name for f in fields(ResponseRow))
if set(RESPONSE_COLUMNS) != set(t.responses.c.keys()):
    raise TypeError(f"responses' columns {RESPONSE_COLUMNS} are not ResponseRow's fields")
# Where the boolean columns are: SQLite's driver returns them as integers.
_RESPONSE_BOOLEANS = tuple(
    i for i, name in enumerate(RESPONSE_COLUMNS) if isinstance(t.responses.c[name].type, Boolean)
)
_R = t.responses.c


def response_of(row: Sequence[Any]) -> ResponseRow:
    """The `ResponseRow` of a row of `RESPONSE_COLUMNS` (booleans made booleans)."""
    values = list(row)
    for i in _RESPONSE_BOOLEANS:
        values[i] = bool(values[i])
    return ResponseRow(*values)


def _get_response(marks: tuple[str, ...]) -> str:
    """The response whose id is the first parameter (and whose user the second, if given)."""
    keys = (_R.id.name, _R.user_id.name)[: len(marks)]
    where = " AND ".join(f"{k} = {m}" for k, m in zip(keys, marks, strict=True))
    return f"SELECT {', '.join(RESPONSE_COLUMNS)} FROM {t.responses.name} WHERE {where}"


GET_RESPONSE = Query.of(_get_response, 1)
GET_USER_RESPONSE = Query.of(_get_response, 2)

# A response's output items in order (`ResponseReads.output_items`), `OutputItemRow`'s fields;
# all of them, or only those kept in the output (`INCLUDED_OUTPUT_ITEMS`). The parameter: the
# response id.
OUTPUT_ITEM_COLUMNS = tuple(f.name for f in fields(OutputItemRow))
_O = t.output_items.c


def _output_items(marks: tuple[str, ...], *, included_only: bool) -> str:
    kept = f" AND {_O.included.name}" if included_only else ""
    return (
        f"SELECT {', '.join(OUTPUT_ITEM_COLUMNS)} FROM {t.output_items.name} "
        f"WHERE {_O.response_id.name} = {marks[0]}{kept} ORDER BY {_O.output_index.name}"
    )


OUTPUT_ITEMS = Query.of(functools.partial(_output_items, included_only=False), 1)
INCLUDED_OUTPUT_ITEMS = Query.of(functools.partial(_output_items, included_only=True), 1)


def item_rows(found: Sequence[Sequence[Any]]) -> list[OutputItemRow]:
    """The `OutputItemRow`s of rows of `OUTPUT_ITEM_COLUMNS` (`included` made a boolean)."""
    return [OutputItemRow(i, item, status, bool(kept), data) for i, item, status, kept, data in found]
