"""PostgreSQL's statements for what a creation takes besides its rows (`_batch.Batch.answered`,
`claimed`): the pending requests it answers, the items added by hand it claims, the
conversations it uses (created on first use, live).

Each is one statement over unnested arrays that returns what it marked, run first in the
creation's transaction (`_pg_render.parts`); the writer compares the rows returned with what the
batch asked for (`taken`) and raises the failure of the first creation refused, so that
transaction commits nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .. import _tables as t
from ..errors import AnswersTaken, ConversationDeleted, ItemsTaken
from ..records import STALE_CLAIM_SECONDS
from . import _sql
from ._batch import Batch
from ._sql import Params, PgStatement, pg_type

_ANSWERS = ("id", "usr", "call", "by")
_CLAIMS = ("seq", "usr", "conv", "by")
_USED = ("usr", "conv")


@functools.lru_cache(maxsize=2)
def statement(answers: bool) -> PgStatement:
    """The answers statement (`answers`), else the claims statement."""
    p = Params()
    if answers:
        pr = t.pending_requests.c
        types = [pg_type(pr.response_id), pg_type(pr.user_id), pg_type(pr.call_id), pg_type(pr.answered_by)]
        source = p.unnest("answers", _ANSWERS, types, "u")
        return PgStatement.of(
            f"UPDATE pending_requests AS p SET status = 'answered', answered_by = u.by\n    FROM {source}\n"
            "    WHERE p.response_id = u.id AND p.user_id = u.usr AND p.call_id = u.call\n"
            "    AND p.status = 'pending'\n"
            "    RETURNING u.by, p.call_id",
            p,
        )
    ci, cv = t.conversation_items.c, t.conversations.c
    used = p.unnest("used", _USED, [pg_type(cv.user_id), pg_type(cv.id)], "f")
    types = [pg_type(ci.seq), pg_type(ci.user_id), pg_type(ci.conversation_id), pg_type(ci.response_id)]
    source = p.unnest("claims", _CLAIMS, types, "u")
    now, stale = p.take("claims.now", pg_type(ci.claimed_at)), p.take("claims.stale", pg_type(ci.claimed_at))
    # The conversations used, created where absent (a first use) and returned unless deleted:
    # one that exists (read live by the turn, or created by another first use meanwhile) is
    # locked (its no-op update) and read as it now is, after a delete that holds it commits;
    # a delete after it waits for this transaction. Then the items: a claim whose response does
    # not exist and that is old was never committed (made before claims committed with their
    # creation), so the item is free. Rows: (creation, seq) per item claimed, (NULL, NULL, user,
    # id) per live conversation used.
    return PgStatement.of(
        "WITH n AS (\n    INSERT INTO conversations AS v (user_id, id, created_at)\n"
        f"    SELECT DISTINCT f.usr, f.conv, {now} FROM {used}\n"
        "    ON CONFLICT (user_id, id) DO UPDATE SET deleted_at = v.deleted_at WHERE v.deleted_at IS NULL\n"
        "    RETURNING v.user_id, v.id\n), m AS (\n"
        f"UPDATE conversation_items AS c SET response_id = u.by, claimed_at = {now}\n    FROM {source}\n"
        "    WHERE c.seq = u.seq AND c.user_id = u.usr AND c.conversation_id = u.conv\n"
        f"    AND (c.response_id IS NULL OR (c.claimed_at < {stale}\n"
        "    AND NOT EXISTS (SELECT 1 FROM responses AS r WHERE r.id = c.response_id)))\n"
        "    RETURNING u.by, c.seq\n)\n"
        "SELECT m.by, m.seq, NULL::text, NULL::text FROM m\n"
        "UNION ALL SELECT NULL, NULL, n.user_id, n.id FROM n",
        p,
    )


def arguments(answers: bool, batch: Batch) -> list[Any]:
    """`statement(answers)`'s arguments for `batch`."""
    values: dict[str, Any] = {}
    if answers:
        rows = [(a.response_id, a.user_id, c, by) for by, a in batch.answered() for c in a.call_ids]
        values.update(zip((f"answers.{n}" for n in _ANSWERS), _sql.columns(rows, len(_ANSWERS)), strict=True))
    else:
        used = [(c.user_id, c.conversation_id) for _, c in batch.claimed()]
        values.update(zip((f"used.{n}" for n in _USED), _sql.columns(used, len(_USED)), strict=True))
        claimed = [(s, c.user_id, c.conversation_id, by) for by, c in batch.claimed() for s in c.seqs]
        values.update(zip((f"claims.{n}" for n in _CLAIMS), _sql.columns(claimed, len(_CLAIMS)), strict=True))
        values["claims.now"], values["claims.stale"] = batch.now, batch.now - STALE_CLAIM_SECONDS
    return statement(answers).bind(values)


def taken(
    answers: bool, batch: Batch, rows: Sequence[Any]
) -> AnswersTaken | ItemsTaken | ConversationDeleted | None:
    """What `statement(answers)` did not mark (`rows`: (creation, call id or seq) it did, and
    the live conversations used), as the failure of the first creation it refused (None:
    every one marked)."""
    marked = {(r[0], r[1]) for r in rows if r[0] is not None}
    if answers:
        for by, a in batch.answered():
            refused = [c for c in a.call_ids if (by, c) not in marked]
            if refused:
                return AnswersTaken(by, refused)
        return None
    live = {(r[2], r[3]) for r in rows if r[0] is None}
    for by, claims in batch.claimed():
        if (claims.user_id, claims.conversation_id) not in live:
            return ConversationDeleted(by, claims.conversation_id)
        if any((by, seq) not in marked for seq in claims.seqs):
            return ItemsTaken(by)
    return None
