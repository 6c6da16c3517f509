"""The end of a response: close what is open, build the final Response, commit the terminal event.

Every end goes through `Ending.finish`: a run's (completed, failed, cancelled) and the ends
recovery gives a response it does not resume (a cancel that reached a dead owner, a foreground
response, one past its recoveries), whose `Closing` is `Interrupted`. The usage is the row's
(what earlier lives committed) plus the run's own.

Invariants:
- Exactly one terminal event per end: the run calls `finish` once (see `run.ResponseRun`), and
  recovery calls it instead of launching a run.
- The terminal event, the closing of the items still open, the status transition, the pending
  requests a completed workflow waits on and the pruning of old checkpoints are one write,
  committed behind every earlier write of the run (so it also proves them). Nothing is awaited
  between closing the items and handing that write over, so a live stream never commits an
  item's closing events without its row.
- The final output lists every item closed other than `incomplete`, in output order: the
  items of earlier lives of the response (read) and this run's own (from memory: its last
  checkpoint writes may still be committing).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from agent_framework import WorkflowCheckpoint

from ...protocol import events as ev
from ...protocol.response import build_response
from ...protocol.sse import dumps
from ...store import ABANDONED_STATUSES, CheckpointRow, Finish, OutputItemRow, PendingRequestRow
from .._af_private import encode_session
from ..pauses.approval_calls import PendingApproval
from ..pauses.pending import pending_request_payloads
from .open_items import ClosedItem
from .plan import RunSpec
from .sinks import Sink
from .telemetry import NO_TRACE, RunTrace
from .usage import RunUsage, Usage

# The `workflow_name` of a plain agent's session rows in the checkpoints table.
SESSION_ROWS = "agent-session"

ItemsReader = Callable[[str], Awaitable[list[OutputItemRow]]]


class Closing(Protocol):
    """What an end needs of the run it ends: its items (closing those still open) and what a
    completed workflow or agent keeps (`pairing.Pairing`; `Interrupted` when no run is left to
    end)."""

    @property
    def closed(self) -> list[ClosedItem]: ...

    @property
    def last_checkpoint(self) -> WorkflowCheckpoint | None: ...

    @property
    def approvals(self) -> list[PendingApproval]: ...

    def close_open(self, status: str) -> list[ClosedItem]: ...


class Interrupted:
    """The `Closing` of a response recovery ends instead of resuming: the items its dead owner
    left open, which recovery has already closed (`incomplete`); no session, no checkpoint to
    keep (such an end is never `completed`)."""

    def __init__(self, closed: list[ClosedItem]) -> None:
        self.closed = list(closed)
        self._open = list(closed)
        self.last_checkpoint: WorkflowCheckpoint | None = None
        self.approvals: list[PendingApproval] = []

    def close_open(self, status: str) -> list[ClosedItem]:
        closing, self._open = self._open, []
        return closing


def _model_error(exc: BaseException) -> dict[str, Any] | None:
    """The model's own error (an OpenAI-compatible API's status and code), if `exc` wraps one."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        status = getattr(cause, "status_code", None)
        if isinstance(status, int) and hasattr(cause, "body"):
            body: dict[str, Any] = cause.body if isinstance(cause.body, dict) else {}
            inner = body.get("error")
            nested: dict[str, Any] = inner if isinstance(inner, dict) else body
            code = getattr(cause, "code", None) or nested.get("code") or "server_error"
            message = nested.get("message") or str(cause)
            return {
                "code": str(code),
                "message": f"The model returned an error (HTTP {status} {code}): {message}",
            }
        cause = cause.__cause__ or cause.__context__
    return None


def failure_error(exc: BaseException) -> dict[str, Any]:
    """The Response `error` of a run that raised `exc`: the model's error when it is one."""
    model = _model_error(exc)
    if model is not None:
        return model
    return {"code": "server_error", "message": f"The agent run failed: {type(exc).__name__}: {exc}"}


def waiting_items(output: list[dict[str, Any]], pending: list[PendingRequestRow]) -> list[dict[str, Any]]:
    """The output items that wait for a person: the approval requests (by `id`) and the
    `request_info` calls (by `call_id`) among the pending requests the end commits."""
    ids = {p.call_id for p in pending}
    return [
        i
        for i in output
        if (i.get("type") == "mcp_approval_request" and i.get("id") in ids)
        or (i.get("type") == "function_call" and i.get("call_id") in ids)
    ]


class Ending:
    def __init__(
        self,
        spec: RunSpec,
        sink: Sink,
        pairing: Closing,
        items: ItemsReader | None,
        usage: RunUsage,
        *,
        trace: RunTrace = NO_TRACE,
    ) -> None:
        self._spec = spec
        self._sink = sink
        self._pairing = pairing
        self._items = items  # None: nothing of this response is stored (store=false)
        self._usage = usage
        self.status: str | None = None
        self._trace = trace

    def usage(self) -> Usage:
        """The response's usage: earlier lives' (kept with the checkpoint resumed from) and this run's."""
        return self._usage.total()

    async def finish(
        self,
        status: str,
        *,
        close_status: str,
        error: dict[str, Any] | None = None,
        incomplete_details: dict[str, Any] | None = None,
        session: Any = None,
    ) -> None:
        """End the response `status` (`incomplete`: the run ended but its reply was cut, as
        `incomplete_details` says; otherwise like `completed`). `session`: a plain agent's
        `AgentSession` (the driver's), kept with a completed or incomplete end."""
        spec = self._spec
        # Read before any item closes: a live stream hands what is emitted to the outbox at the
        # next loop turn, so closing events emitted before an await would commit alone, without
        # their items' rows, and a crash then would leave items done that recovery no longer
        # continues and the output never lists. From here to the commit nothing is awaited.
        stored = await self._stored_output()
        closed = self._pairing.close_open(close_status)
        now = time.time()
        output = self._final_output(stored)
        use = self.usage().body()
        finished = status in ("completed", "incomplete")
        row = self._session_row(now, session) if finished else None
        response = build_response(
            spec.request,
            response_id=spec.response_id,
            status=status,
            created_at=int(spec.created_at),
            completed_at=int(now) if status == "completed" else None,
            output=output,
            error=error,
            incomplete_details=incomplete_details,
            usage=use,
            conversation_id=spec.request.conversation_id,
        )
        if status == "completed":
            terminal = ev.response_completed(response)
        elif status == "incomplete":
            terminal = ev.response_incomplete(response)
        else:
            terminal = ev.response_failed(response)
        self._sink.emit(terminal)
        with self._trace.committing("end", status=status):
            await self._commit_end(spec, status, closed, row, error, use, now, output, incomplete_details)
        self.status = status

    async def _commit_end(
        self,
        spec: RunSpec,
        status: str,
        closed: list[Any],
        session: CheckpointRow | None,
        error: dict[str, Any] | None,
        use: dict[str, Any],
        now: float,
        output: list[dict[str, Any]],
        incomplete_details: dict[str, Any] | None = None,
    ) -> None:
        pending = self._pending_rows(session) if status in ("completed", "incomplete") else []
        await self._sink.commit(
            closed,
            checkpoint=session,
            pending=pending,
            waiting=waiting_items(output, pending) if pending else (),
            # A failed or cancelled run keeps its lineage's checkpoints: a conversation's next
            # turn continues from the last turn that finished, not from this one.
            prune=(spec.user_id, None if status in ABANDONED_STATUSES else spec.lineage),
            finish=Finish(
                status=status,
                completed_at=now if status == "completed" else None,
                error=dumps(error) if error is not None else None,
                incomplete_details=dumps(incomplete_details) if incomplete_details is not None else None,
                usage=dumps(use),
            ),
        )

    async def _stored_output(self) -> dict[int, dict[str, Any]] | None:
        """The output items earlier lives of the response stored, by index (None: every item of
        this response is this run's own, no need to read them)."""
        if self._items is None or self._spec.all_output_here:
            return None
        return {r.output_index: json.loads(r.data) for r in await self._items(self._spec.response_id)}

    def _final_output(self, stored: dict[int, dict[str, Any]] | None) -> list[dict[str, Any]]:
        closed = self._pairing.closed
        if stored is None:
            # Every item of this response was closed by this run.
            # (In output order: a tool the server ran is closed before the items open around it.)
            return [c.item for c in sorted(closed, key=lambda c: c.output_index) if c.included]
        # Read alone, the terminal event of a recovered response missed the last superstep's
        # outputs (still being committed): this run's own items come from memory.
        by_index = dict(stored)
        for c in closed:
            if c.included:
                by_index[c.output_index] = c.item
            else:
                by_index.pop(c.output_index, None)
        return [by_index[i] for i in sorted(by_index)]

    def _session_row(self, now: float, session: Any) -> CheckpointRow | None:
        """A plain agent's session, kept with the end (a continuation restores it)."""
        if session is None or self._items is None:
            return None
        spec = self._spec
        return CheckpointRow(
            checkpoint_id=f"session_{spec.response_id}",
            user_id=spec.user_id,
            lineage=spec.lineage,
            response_id=spec.response_id,
            workflow_name=SESSION_ROWS,
            event_seq=self._sink.last_seq,
            data=encode_session(session.to_dict()),
            created_at=now,
        )

    def _pending_rows(self, session: CheckpointRow | None) -> list[PendingRequestRow]:
        approvals = self._pairing.approvals
        if session is not None and approvals:
            # A plain agent's tool approvals: its session holds them; the rows let a reply be
            # checked and built (the request itself is what the framework binds the answer to).
            return [
                PendingRequestRow(
                    response_id=self._spec.response_id,
                    call_id=a.request_id,
                    user_id=self._spec.user_id,
                    checkpoint_id=session.checkpoint_id,
                    status="pending",
                    data=dumps(a.request),
                )
                for a in approvals
            ]
        cp = self._pairing.last_checkpoint
        if cp is None:
            return []
        return [
            PendingRequestRow(
                response_id=self._spec.response_id,
                call_id=call_id,
                user_id=self._spec.user_id,
                checkpoint_id=cp.checkpoint_id,
                status="pending",
                data=dumps(payload),
            )
            for call_id, payload in pending_request_payloads(cp).items()
        ]
