"""A run's journal: its records, its counts, and what a tool reads while it runs.

`RunJournal` holds the records an earlier life of the response left (found by executor and
place) and hands the run's own to its sink (`record`); `CURRENT_RUN` is the journal of the run
this task (and the tasks it spawns) belongs to, `TOOL_KEY` the idempotency key of the tool call
it runs (`tool_idempotency_key`).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from ...observability import metrics
from ...store import JournalRow

log = logging.getLogger("durable_responses.journal")

__all__ = [
    "CURRENT_RUN",
    "RERUN_MARK",
    "TOOL_KEY",
    "JournalStats",
    "RunJournal",
    "ToolInterrupted",
    "activate",
    "idempotency_key",
    "not_safe_to_rerun",
    "tool_idempotency_key",
]

# The run whose agents' calls are journaled: set by the driver around `agent.run`, so the
# executors' tasks (which copy the context when created) see it too.
CURRENT_RUN: contextvars.ContextVar[RunJournal | None] = contextvars.ContextVar(
    "durable_responses_journal", default=None
)
# The idempotency key of the tool call running in this task (see `tool_idempotency_key`).
TOOL_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "durable_responses_tool_key", default=None
)

# Where a tool's "not safe to re-run" mark lives (`FunctionTool.additional_properties`).
RERUN_MARK = "durable_responses.rerun"


def tool_idempotency_key() -> str | None:
    """The idempotency key of the tool call running now, stable across re-runs of the response.

    A tool the host runs for a response reads it and hands it to the service it calls (an
    email provider's `Idempotency-Key` header, a payment's idempotency key): when a crash
    interrupted the tool and the host runs it again, the service sees the same key and does the
    work once. None outside a tool call of a hosted response (a unit test of the tool)::

        from durable_responses import tool_idempotency_key

        @tool
        def send_email(to: str, subject: str, body: str) -> str:
            key = tool_idempotency_key()
            mail.send(to=to, subject=subject, body=body, headers={"Idempotency-Key": key})
            return "sent"
    """
    return TOOL_KEY.get()


def not_safe_to_rerun(tool: Any) -> Any:
    """Mark an agent-framework tool as one that must not run again after a crash interrupted it
    (its effect may have happened and cannot be told apart): the response then fails with a
    clear error instead. Returns the tool (usable as a decorator above `@tool`)."""
    props = getattr(tool, "additional_properties", None)
    if props is None:
        props = {}
        tool.additional_properties = props
    props[RERUN_MARK] = False
    return tool


class ToolInterrupted(Exception):
    """A tool marked `not_safe_to_rerun` was running when the process stopped."""


def idempotency_key(response_id: str, executor: str, call_id: str) -> str:
    """The key of a tool call: the same for every run of the same call of the response."""
    digest = hashlib.sha256(f"{response_id}\x00{executor}\x00{call_id}".encode()).hexdigest()
    return f"idem_{digest[:40]}"


Record = Callable[[list[JournalRow], bool], "asyncio.Future[None]"]


@dataclass(frozen=True)
class JournalStats:
    """The journal's counts over the response's lives (kept on its row, `responses.journal`); a
    run's journal replaces its counts with new ones as it counts."""

    recorded: int = 0  # calls recorded (model calls, tool results)
    replayed: int = 0  # model calls and tool calls answered from the journal
    rerun: int = 0  # tool calls run again under their key after an interrupted run

    @classmethod
    def from_json(cls, text: str | None) -> JournalStats:
        body = json.loads(text) if text else {}
        if not isinstance(body, dict):
            return cls()
        return cls(*(int(body.get(k) or 0) for k in ("recorded", "replayed", "rerun")))

    def json(self) -> str:
        counts = {"recorded": self.recorded, "replayed": self.replayed, "rerun": self.rerun}
        return orjson.dumps(counts).decode()


@dataclass
class RunJournal:
    """One run's journal: the records found when it started, and its own.

    `record` hands rows to the outbox (the run's sink) and returns the write's future; None:
    nothing is recorded (a `store=false` run), only idempotency keys are given."""

    response_id: str
    record: Record | None
    records: Sequence[JournalRow] = ()
    checkpoint_id: str = ""  # the checkpoint the current superstep started from
    stats: JournalStats = field(default_factory=JournalStats)
    # Whether the database may hold records of this response (found at start, or written):
    # then the next checkpoint (or the end) deletes them.
    dirty: bool = False

    def __post_init__(self) -> None:
        # The counts the response's row holds already (an earlier life's): no write carries them.
        self.baseline = self.stats
        self._found: dict[tuple[str, str], JournalRow] = {}
        self._model_calls: dict[str, int] = {}
        self._mismatch_logged = False
        self.load(self.records)

    def load(self, rows: Sequence[JournalRow]) -> None:
        """Take the records an earlier life of the response left (oldest first)."""
        for row in rows:
            self._found[(row.executor, row.place)] = row  # the newest of a place counts
        if rows:
            self.dirty = True

    def start(self, checkpoint_id: str, rows: Sequence[JournalRow]) -> None:
        """The run starts from `checkpoint_id` (the one it restores; "" for none), with the
        records an earlier life of the response left (`rows`, oldest first)."""
        self.checkpoint_id = checkpoint_id
        self.load(rows)

    def new_superstep(self, checkpoint_id: str) -> None:
        """A checkpoint that starts a superstep was saved: what the journal held is for the
        superstep before it (its deletion rides with that checkpoint's write)."""
        self.checkpoint_id = checkpoint_id
        self._found.clear()
        self._model_calls.clear()
        self.dirty = False

    def next_model_place(self, executor: str) -> str:
        n = self._model_calls.get(executor, 0) + 1
        self._model_calls[executor] = n
        return f"model:{n}"

    def find(self, executor: str, place: str, digest: str) -> JournalRow | None:
        row = self._found.get((executor, place))
        if row is None:
            return None
        if row.digest != digest:
            if not self._mismatch_logged:
                self._mismatch_logged = True
                log.warning(
                    "response %s: the journal's record of %s %s was made for another input "
                    "(the app changed its calls?): the call is made again",
                    self.response_id,
                    executor,
                    place,
                )
            return None
        return row

    def write(
        self, executor: str, place: str, state: str, digest: str, data: str, *, wait: bool
    ) -> asyncio.Future[None] | None:
        if self.record is None:
            return None
        row = JournalRow(self.checkpoint_id, executor, place, state, digest, data, time.time())
        self._found[(executor, place)] = row
        self.dirty = True
        if state == "done":
            self.stats = replace(self.stats, recorded=self.stats.recorded + 1)
            metrics.JOURNAL_CALLS.inc(outcome="recorded")
        return self.record([row], wait)

    def replayed(self) -> None:
        self.stats = replace(self.stats, replayed=self.stats.replayed + 1)
        metrics.JOURNAL_CALLS.inc(outcome="replayed")

    def rerun(self) -> None:
        self.stats = replace(self.stats, rerun=self.stats.rerun + 1)
        metrics.JOURNAL_CALLS.inc(outcome="rerun")


def activate(journal: RunJournal | None) -> None:
    """Make `journal` the one this task's (and the tasks it spawns) agents record in."""
    CURRENT_RUN.set(journal)
