"""The operator's view of the host: what `/v1/admin/...` (and the page at `/ui/`) shows and does.

Job: list responses (one tenant's, or every tenant's for the admin key), show one response
whole (its lives, the supersteps with the checkpoint each paired, its items, its events, what
it awaits, its webhook deliveries, the final output), stream its events as they commit, answer
what it awaits (a continuation created under the response's own user), and summarize the
replica (counts by status, runs in flight, database size).

Invariants:
- `scope` is the caller's user id, or None for the admin key (decided by the HTTP layer): a
  response outside the scope is a 404, as everywhere.
- An answer is an ordinary continuation (`Host.create`): the same checks, the same 4xx.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..observability import metrics, tracing
from ..protocol import errors
from ..protocol.request import CreateRequest, parse_create_request
from ..store import Delivery, EventRow, JournalRow
from ..store.ops.ops import LoggedCheckpoint, ResponseSummary
from .delivery.relay import ResponseStream

if TYPE_CHECKING:
    from .host import Host

# Events a page may read at once (a long response is read in pages by `events`).
MAX_EVENTS = 5000


def _summary(s: ResponseSummary, now: float) -> dict[str, Any]:
    trace_id = None
    if s.trace_context:
        try:
            trace_id = json.loads(s.trace_context).get("trace")
        except (ValueError, AttributeError):
            trace_id = None
    return {
        "id": s.id,
        "user_id": s.user_id,
        "status": s.status,
        "background": s.background,
        "delivery": s.delivery,
        "app": s.app,
        "app_version": s.app_version,
        "created_at": s.created_at,
        "completed_at": s.completed_at,
        "age_seconds": round(max(0.0, now - s.created_at), 3),
        "owner": s.lease_owner,
        "created_by": s.created_by,
        "recoveries": s.recovery_count,
        "conversation_id": s.conversation_id,
        "previous_response_id": s.previous_response_id,
        "trace_id": trace_id,
        "awaiting_input": bool(s.awaiting_input),
    }


def _kind_of_pending(call_id: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """What answers pending request `call_id`: from the output item that shows it."""
    for item in items:
        if item.get("type") == "mcp_approval_request" and item.get("id") == call_id:
            return {
                "answer": "mcp_approval_response",
                "name": item.get("name"),
                "arguments": item.get("arguments"),
            }
        if item.get("type") == "function_call" and item.get("call_id") == call_id:
            return {
                "answer": "function_call_output",
                "name": item.get("name"),
                "arguments": item.get("arguments"),
            }
    return {"answer": "message", "name": None, "arguments": None}


class Admin:
    def __init__(self, host: Host) -> None:
        self._host = host
        self._store = host.store

    async def _find(self, scope: str | None, response_id: str) -> ResponseSummary:
        found = await self._store.ops.summary(response_id, scope)
        if found is None:
            raise errors.not_found(f"Response with id '{response_id}' not found.", param="response_id")
        return found

    async def overview(self, scope: str | None) -> dict[str, Any]:
        host = self._host
        return {
            "replica": host.owner,
            "app": host.app.name,
            # What the app takes (its kind and its input's JSON schema), as GET /v1/models shows.
            "app_input": host.app.describe(),
            "apps": list(host.lanes.names),
            # Each app's version here, the older ones it also runs, and (admin) the responses
            # waiting for a replica of another version, as recovery last counted them.
            "versions": {
                lane.name: {"runs": lane.version, "compatible": list(lane.compatible[1:])}
                for lane in host.lanes
            },
            "waiting_for_version": [
                {"app": app, "version": version, "responses": n}
                for (app, version), n in sorted(metrics.waiting_counts().items())
            ]
            if scope is None
            else [],
            "delivery": host.settings.delivery.value,
            "admin": scope is None,
            "user_id": scope,
            "counts": await self._store.ops.status_counts(scope),
            "runs_in_flight": len(host.registry),
            "database": await self._store.ops.database_bytes() if scope is None else None,
            "tracing": tracing.enabled(),
        }

    async def list(
        self, scope: str | None, *, status: str | None, limit: int, before: str | None
    ) -> dict[str, Any]:
        cursor: tuple[float, str] | None = None
        if before:
            at, _, rid = before.partition(":")
            try:
                cursor = (float(at), rid)
            except ValueError:
                raise errors.bad_request(
                    "`before` must be the `next` of a previous page.", param="before"
                ) from None
        rows = await self._store.ops.list_responses(
            user_id=scope, status=status, before=cursor, limit=limit + 1
        )
        now = time.time()
        page = rows[:limit]
        last = page[-1] if page else None
        return {
            "object": "list",
            "data": [_summary(r, now) for r in page],
            "has_more": len(rows) > limit,
            "next": f"{last.created_at!r}:{last.id}" if last is not None and len(rows) > limit else None,
        }

    async def detail(self, scope: str | None, response_id: str) -> dict[str, Any]:
        s = await self._find(scope, response_id)
        store = self._store
        row = await store.get_response(response_id, s.user_id)
        if row is None:
            raise errors.not_found(f"Response with id '{response_id}' not found.", param="response_id")
        items = [
            {
                "output_index": o.output_index,
                "status": o.status,
                "included": o.included,
                "item": json.loads(o.data),
            }
            for o in await store.output_items(response_id, included_only=False)
        ]
        events = await store.read_events(response_id, -1, limit=MAX_EVENTS)
        logged = [
            c for c in await store.ops.checkpoint_log(response_id) if c.workflow_name != "agent-session"
        ]
        lives = [
            {
                "life": 1,
                "at": s.created_at,
                "owner": s.created_by,
                "checkpoint_id": None,
                "previous_owner": None,
            }
        ]
        lives += [
            {"life": t.attempt + 1, **{k: v for k, v in asdict(t).items() if k not in ("attempt", "span_id")}}
            for t in await store.ops.takeovers(response_id)
        ]
        plain_items = [i["item"] for i in items]
        pending = [
            {
                "call_id": p.call_id,
                "status": p.status,
                "answered_by": p.answered_by,
                **_kind_of_pending(p.call_id, plain_items),
            }
            for p in await store.ops.pending_requests(response_id)
        ]
        deliveries = [_delivery(d) for d in await store.webhooks.deliveries(response_id=response_id)]
        return {
            "summary": _summary(s, time.time()),
            "journal": _journal(row.journal, await store.journal(response_id)),
            "response": await self._host.response_json(row),
            "items": items,
            "events": [{"seq": e.seq, "type": e.type, "data": json.loads(e.data)} for e in events],
            "events_truncated": len(events) >= MAX_EVENTS,
            "supersteps": _supersteps(logged, events),
            "lives": lives,
            "pending": pending,
            "awaiting_input": any(p["status"] == "pending" for p in pending),
            "webhooks": deliveries,
        }

    async def events(self, scope: str | None, response_id: str, *, after: int, limit: int) -> dict[str, Any]:
        await self._find(scope, response_id)
        rows = await self._store.read_events(response_id, after, limit=limit + 1)
        return {
            "object": "list",
            "data": [{"seq": e.seq, "type": e.type, "data": json.loads(e.data)} for e in rows[:limit]],
            "has_more": len(rows) > limit,
        }

    async def stream(self, scope: str | None, response_id: str, after: int) -> ResponseStream:
        await self._find(scope, response_id)
        return ResponseStream(self._host.relay.committed(response_id, after))

    async def retire(self, scope: str | None, version: str, app: str | None) -> dict[str, Any]:
        """End (`failed`) the waiting responses of a retired app version: admin only."""
        if scope is not None:
            raise errors.forbidden("Retiring a version ends other tenants' responses: use the admin key.")
        return {"version": version, "ended": await self._host.recovery.retire(version, app)}

    async def reply(self, scope: str | None, response_id: str, body: object) -> dict[str, Any]:
        """Answer what `response_id` awaits: `{"input": [items] | "text"}`, as its own user."""
        s = await self._find(scope, response_id)
        if not isinstance(body, dict) or "input" not in body:
            raise errors.bad_request('Send {"input": [...items] or "a message"}.', param="input")
        row = await self._store.get_response(response_id, s.user_id)
        assert row is not None
        original = CreateRequest.from_json_dict(json.loads(row.request))
        request: dict[str, Any] = {
            "model": original.model or "any",
            "input": body["input"],
            "background": True,
        }
        if s.conversation_id:
            request["conversation"] = s.conversation_id
        else:
            request["previous_response_id"] = response_id
        created = await self._host.create(s.user_id, parse_create_request(request), None)
        return {"id": created.response_id, "previous_response_id": response_id}


def _supersteps(logged: Sequence[LoggedCheckpoint], events: Sequence[EventRow]) -> list[dict[str, Any]]:
    """Each paired checkpoint (a superstep): its events and the items it closed."""
    supersteps = []
    previous = -1
    for n, c in enumerate(logged, start=1):
        closed = [
            json.loads(e.data).get("item", {}).get("id")
            for e in events
            if previous < e.seq <= c.event_seq and e.type == "response.output_item.done"
        ]
        supersteps.append(
            {
                "superstep": n,
                "checkpoint_id": c.checkpoint_id,
                "event_seq": c.event_seq,
                "events": c.event_seq - previous,
                "bytes": c.bytes,
                "created_at": c.created_at,
                "items_closed": [i for i in closed if i],
            }
        )
        previous = max(previous, c.event_seq)
    return supersteps


def _delivery(d: Delivery) -> dict[str, Any]:
    return {
        "event_id": d.event_id,
        "type": d.type,
        "endpoint": d.endpoint,
        "status": d.status,
        "attempts": d.attempts,
        "next_attempt_at": d.next_attempt_at,
        "last_error": d.last_error,
        "delivered_at": d.delivered_at,
    }


def _journal(counts: str | None, records: Sequence[JournalRow]) -> dict[str, Any]:
    return {
        # Over every life of the response: calls recorded, replayed instead of made again,
        # tools run again under their idempotency key.
        "counts": json.loads(counts) if counts else {"recorded": 0, "replayed": 0, "rerun": 0},
        # What a re-run would replay now (the superstep after the newest checkpoint).
        "records": [
            {
                "checkpoint_id": j.checkpoint_id or None,
                "executor": j.executor,
                "place": j.place,
                "state": j.state,
                "bytes": len(j.data),
                "created_at": j.created_at,
            }
            for j in records
        ],
    }
