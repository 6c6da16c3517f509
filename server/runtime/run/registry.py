"""The registry of live runs in this process: who runs what, draining, and stopping them all.

Invariants:
- A response has at most one live run in this process (`add` replaces nothing: the launcher
  registers a run once, and the run leaves the registry when it finishes).
- Once draining (SIGTERM), the process accepts no new response; background streams end at
  once (their runs go on elsewhere), foreground runs get the grace period to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator

from .run import ResponseRun, StopKind


class RunRegistry:
    def __init__(self, on_removed: Callable[[ResponseRun], None] | None = None) -> None:
        self._runs: dict[str, ResponseRun] = {}
        self.draining = asyncio.Event()
        self._on_removed = on_removed
        # Responses whose run stopped because the database refused a write: still leased to
        # this process (its release may have failed too), resumed by our own recovery as soon
        # as writes work again, without waiting for the lease to expire.
        self.stranded: set[str] = set()
        self.stranded_added = asyncio.Event()

    def strand(self, response_id: str) -> None:
        """A run of ours stopped on a database error: recovery resumes it (see `stranded`)."""
        self.stranded.add(response_id)
        self.stranded_added.set()

    # -- membership ---------------------------------------------------------------------

    def add(self, run: ResponseRun) -> None:
        """Register a run built with `remove` among its `on_finished` (the launcher's)."""
        self._runs[run.response_id] = run

    def remove(self, run: ResponseRun) -> None:
        """A run finished: it leaves the registry (if it is the one registered)."""
        if self._runs.get(run.response_id) is run:
            del self._runs[run.response_id]
        if self._on_removed is not None:
            self._on_removed(run)

    def get(self, response_id: str) -> ResponseRun | None:
        return self._runs.get(response_id)

    def __len__(self) -> int:
        return len(self._runs)

    def __iter__(self) -> Iterator[ResponseRun]:
        return iter(list(self._runs.values()))

    def owned(self) -> list[str]:
        """Ids of the responses whose runs are still going (their leases need renewing)."""
        return [rid for rid, run in self._runs.items() if run.spec.request.store and not run.done.is_set()]

    @property
    def accepting(self) -> bool:
        return not self.draining.is_set()

    def stream_should_end(self, response_id: str) -> bool:
        """Whether a relay of this response should end now: draining, and no foreground run of
        it here (its client resumes elsewhere with Last-Event-ID)."""
        if not self.draining.is_set():
            return False
        run = self._runs.get(response_id)
        return run is None or run.background

    # -- control ------------------------------------------------------------------------

    def stop(self, response_id: str, kind: StopKind, message: str = "") -> ResponseRun | None:
        run = self._runs.get(response_id)
        if run is not None:
            run.stop(kind, message)
        return run

    def stop_foreground(self, response_id: str) -> None:
        """The client of a foreground response went away: cancel it (background runs go on)."""
        run = self._runs.get(response_id)
        if run is not None and not run.background and not run.done.is_set():
            run.stop(StopKind.CANCELLED)

    def begin_drain(self) -> bool:
        """Stop accepting; returns False if already draining."""
        if self.draining.is_set():
            return False
        self.draining.set()
        return True

    async def stop_all(self, grace: float) -> None:
        """Let foreground runs finish within `grace`, fail the rest, leave background to recovery."""
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not any(not r.background and not r.done.is_set() for r in self):
                break
            await asyncio.sleep(0.05)
        for run in self:
            if run.background:
                run.stop(StopKind.ABANDON)
            else:
                run.stop(StopKind.FAILED, "The server shut down before this response finished; retry it.")
        for run in self:
            if run.task is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(run.task), 5)
