"""One run of one response: its lifecycle (start, stop, the end recorded exactly once).

A run is three collaborators: the `Driver` (enters the app, feeds updates, paces), the
`Pairing` (each checkpoint committed with the outputs before it) and the `Ending` (the
terminal event). This module decides which end a run gets:

Invariants:
- Exactly one terminal event per response: `Ending.finish` is called at most once, by
  `execute()`, and once begun it completes even if the task is cancelled again meanwhile.
- A run stopped with `abandon` (shutdown, lost lease) writes nothing more: recovery resumes
  the response from its newest paired checkpoint.
- A run whose write the database refused writes nothing more either: what it did since its
  last paired checkpoint is not durable. It hands the response over (releases its lease) so
  recovery resumes it from that checkpoint once the database takes writes again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum
from typing import Any

from ...observability.logs import bind_response
from ...store import LeaseLost
from ..faults import database_error
from .drive import Driver
from .ending import Ending, failure_error
from .plan import RunSpec
from .sinks import Sink
from .telemetry import NO_TRACE, RunTrace

log = logging.getLogger("durable_responses.run")

# Told of a run once it finished, whatever its end (in the order given; one that raises is
# logged, the others still run).
OnFinished = Callable[["ResponseRun"], None]


class StopKind(StrEnum):
    CANCELLED = "cancelled"  # the client cancelled: ends `cancelled`
    FAILED = "failed"  # the server gave up on it (shutdown of a foreground run): ends `failed`
    ABANDON = "abandon"  # leave it to recovery: writes nothing more


class StopRun(Exception):
    """Raised into a run to stop it; `kind` says how the response ends."""

    def __init__(self, kind: StopKind, message: str = "") -> None:
        super().__init__(message or kind)
        self.kind = kind
        self.message = message


class ResponseRun:
    def __init__(
        self,
        spec: RunSpec,
        *,
        sink: Sink,
        driver: Driver,
        ending: Ending,
        hand_over: Callable[[bool], Awaitable[None]],
        trace: RunTrace = NO_TRACE,
        on_finished: Sequence[OnFinished] = (),
    ) -> None:
        self.spec = spec
        self.trace = trace
        self.response_id = spec.response_id
        self.background = spec.background
        self._sink = sink
        self._driver = driver
        self._ending = ending
        self._hand_over = hand_over
        self.task: asyncio.Task[None] | None = None
        self.done = asyncio.Event()
        self.stop_reason: StopRun | None = None
        self._on_finished = tuple(on_finished)

    @property
    def final_status(self) -> str | None:
        return self._ending.status

    # -- control ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the run (idempotent)."""
        if self.task is None:
            self.task = asyncio.create_task(self.execute(), name=f"run-{self.response_id}")

    def start_soon(self, at_most: float) -> None:
        """Start when the caller says (`start()`), or after `at_most` seconds, whichever is first.

        A streaming client's relay starts the run once `response.created` is on its way, so an
        agent that hogs the event loop cannot hold back the first events.
        """
        asyncio.get_running_loop().call_later(at_most, self.start)

    def stop(self, kind: StopKind, message: str = "") -> None:
        """Stop the run; `abandon` leaves the response to recovery (shutdown, lost lease).

        Only the first stop counts, and the task is cancelled once: a second cancellation would
        land in the middle of recording the end.
        """
        if self.stop_reason is not None:
            return
        self.stop_reason = StopRun(kind, message)
        if self.task is not None and not self.task.done():
            self.task.cancel()

    # -- the run ------------------------------------------------------------------------

    async def execute(self) -> None:
        """The run, inside its run span (agent-framework's spans nest under it); its log lines
        name the response. The span ends here only if the run recorded the response's end."""
        bind_response(self.response_id)
        try:
            with self.trace.activate():
                await self._execute()
        finally:
            self.trace.close(self.final_status)

    async def _execute(self) -> None:
        ending: Any = None
        try:
            if self.stop_reason is not None:  # stopped before it started
                raise asyncio.CancelledError
            await self._driver.drive()
            stopping = self._stopping()
            ending = self._end_completed() if stopping is None else self._end_after_stop(stopping)
        except asyncio.CancelledError:
            reason = self.stop_reason
            if reason is None or reason.kind == StopKind.ABANDON:
                self._finished()
                raise
            ending = self._end_after_stop(reason)
        except LeaseLost:
            log.warning("response %s: lease lost, another process continues it", self.response_id)
        except Exception as exc:
            failure = self._sink.failure
            if isinstance(failure, LeaseLost):
                log.warning("response %s: lease lost, another process continues it", self.response_id)
            elif self.stop_reason is not None and self.stop_reason.kind == StopKind.ABANDON:
                # Abandoned (shutdown, lease lost, deleted) while the framework turned the
                # cancellation into its own error: it writes nothing more, releases nothing
                # (a shutdown's hand-off releases its lease uncounted).
                log.info("response %s: abandoned to recovery (%s)", self.response_id, exc)
            elif (stopping := self._stopping()) is not None:
                # Stopped (cancel) while the framework turned the cancellation into its own error.
                ending = self._end_after_stop(stopping)
            elif failure is not None or database_error(exc) is not None:
                # The database's health log says it is down, once; each run only notes it.
                down = database_error(failure if failure is not None else exc)
                (log.info if down is not None else log.error)(
                    "response %s: could not commit or read (%s); stopping the run and leaving the "
                    "response to recovery from its newest paired checkpoint",
                    self.response_id,
                    failure if failure is not None else exc,
                )
                await self._release(outage=down is not None)
            else:
                error = failure_error(exc)
                if error["code"] == "server_error":
                    log.exception("response %s failed", self.response_id)
                else:  # the model's own error (rate limit, context length...): no traceback
                    log.warning("response %s failed: %s", self.response_id, error["message"])
                ending = self._ending.finish("failed", close_status="incomplete", error=error)
        if ending is not None:
            # The end is recorded whatever happens to this task from now on (a late cancel).
            end_task = asyncio.ensure_future(ending)
            while not end_task.done():
                try:
                    await asyncio.shield(end_task)
                except asyncio.CancelledError:
                    continue
                except Exception:
                    break  # inspected just below
            problem = "cancelled" if end_task.cancelled() else end_task.exception()
            if problem is not None:
                quiet = isinstance(problem, BaseException) and database_error(problem) is not None
                (log.info if quiet else log.error)(
                    "response %s: could not record its end: %s", self.response_id, problem
                )
                await self._release(outage=quiet)
        self._finished()

    def _finished(self) -> None:
        self.done.set()
        for cb in self._on_finished:
            try:
                cb(self)
            except Exception:  # a callback must not turn a finished run into a failed one
                log.exception("on_finished callback failed")

    def _stopping(self) -> StopRun | None:
        reason = self.stop_reason
        return reason if reason is not None and reason.kind != StopKind.ABANDON else None

    async def _release(self, *, outage: bool) -> None:
        """Hand the response over to recovery (`hand_over` never raises). `outage`: the
        database could not be used; this process resumes the response itself once writes
        work again (it still holds the lease, if even the release failed), without counting a
        recovery. Any other refusal is a takeover like a crash's: counted, so a write that
        always fails ends the response after DURABLE_RESPONSES_MAX_RECOVERIES."""
        await self._hand_over(outage)

    async def _end_after_stop(self, reason: StopRun) -> None:
        if reason.kind == StopKind.CANCELLED:
            await self._ending.finish("cancelled", close_status="incomplete")
        else:
            await self._ending.finish(
                "failed",
                close_status="incomplete",
                error={"code": "server_error", "message": reason.message or "The response was stopped."},
            )

    async def _end_completed(self) -> None:
        if self._driver.truncated:
            # The model's last reply was cut at the token limit: what it gave is kept.
            await self._ending.finish(
                "incomplete",
                close_status="completed",
                incomplete_details={"reason": "max_output_tokens"},
                session=self._driver.session,
            )
            return
        await self._ending.finish("completed", close_status="completed", session=self._driver.session)
