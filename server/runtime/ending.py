"""The end of a run: close what is open, build the final Response, commit the terminal event.

Invariants:
- Exactly one terminal event per run end: the run calls `finish` once (see `run.ResponseRun`).
- The terminal event, the closing of the items still open, the status transition, the pending
  requests a completed workflow waits on and the pruning of old checkpoints are one write,
  committed behind every earlier write of the run (so it also proves them).
- The final output lists every item closed other than `incomplete`, in output order: the
  items of earlier lives of the response (read) and this run's own (from memory: its last
  checkpoint writes may still be committing).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol import events as ev
from ..protocol.response import build_response, usage
from ..protocol.sse import dumps
from ..store import ABANDONED_STATUSES, Finish, OutputItemRow, PendingRequestRow
from ._af_private import pending_request_payloads
from .pairing import Pairing
from .plan import RunSpec
from .sinks import Sink

ItemsReader = Callable[[str], Awaitable[list[OutputItemRow]]]


def failure_error(exc: BaseException) -> dict[str, Any]:
    """The Response `error` of a run that raised `exc`."""
    return {"code": "server_error", "message": f"The agent run failed: {type(exc).__name__}: {exc}"}


class Ending:
    def __init__(self, spec: RunSpec, sink: Sink, pairing: Pairing, items: ItemsReader | None) -> None:
        self._spec = spec
        self._sink = sink
        self._pairing = pairing
        self._items = items  # None: nothing of this response is stored (store=false)
        self.status: str | None = None

    async def finish(self, status: str, *, close_status: str, error: dict[str, Any] | None = None) -> None:
        spec = self._spec
        closed = self._pairing.close_open(close_status)
        for c in closed:
            c.included = c.status == "completed"
        now = time.time()
        output = await self._final_output()
        mapper = self._pairing.mapper
        use = usage(mapper.usage_in, mapper.usage_out)
        response = build_response(
            spec.request,
            response_id=spec.response_id,
            status=status,
            created_at=int(spec.created_at),
            completed_at=int(now) if status == "completed" else None,
            output=output,
            error=error,
            usage=use,
            conversation_id=spec.request.conversation_id,
        )
        terminal = ev.response_completed(response) if status == "completed" else ev.response_failed(response)
        self._sink.emit(terminal)
        await self._sink.commit(
            closed,
            pending=self._pending_rows() if status == "completed" else [],
            # A failed or cancelled run keeps its lineage's checkpoints: a conversation's next
            # turn continues from the last turn that finished, not from this one.
            prune=(spec.user_id, None if status in ABANDONED_STATUSES else spec.lineage),
            finish=Finish(
                status=status,
                completed_at=now if status == "completed" else None,
                error=dumps(error) if error is not None else None,
                usage=dumps(use),
            ),
        )
        self.status = status

    async def _final_output(self) -> list[dict[str, Any]]:
        closed = self._pairing.closed
        if self._items is None or self._spec.all_output_here:
            # Every item of this response was closed by this run: no need to read them back.
            return [c.item for c in closed if c.included]
        # Read alone, the terminal event of a recovered response missed the last superstep's
        # outputs (still being committed): this run's own items come from memory.
        by_index = {r.output_index: json.loads(r.data) for r in await self._items(self._spec.response_id)}
        for c in closed:
            if c.included:
                by_index[c.output_index] = c.item
            else:
                by_index.pop(c.output_index, None)
        return [by_index[i] for i in sorted(by_index)]

    def _pending_rows(self) -> list[PendingRequestRow]:
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
