"""The journal: a response's model and tool calls recorded in the outbox, so a re-run after a
crash replays what finished instead of doing it again.

Job: agent-framework's public chat and function middleware (`middleware`), installed on the
run's agents (`install`: a plain agent's run, the agents of a workflow's agent executors, which
include every agent of the orchestration builders; a custom executor's own agents through
`journaled`), record each call through the run's sink, in the same fenced, ordered writes as its events:
- a model call when its stream ends (its updates, in order, coalesced: `codec`; the write is
  not waited for);
- a tool call twice: its *intent* before it runs, its *done* record (the result) before the
  result goes back to the model (both waited for).
On a re-run (recovery after a crash) the same call, found by its place and with the same input
(`digest`), is replayed: a model call's updates come back in the same order without calling
the model; a done tool call returns its result without running the tool; a tool with only its
intent (the crash hit while it ran) runs again under the same idempotency key
(`tool_idempotency_key`), unless it is marked `not_safe_to_rerun`: then the response fails with
`ToolInterrupted`, and a person decides (an approval-gated tool is not asked again: the
approval was for one run, and whether that run took effect is what nobody knows). A record
whose input differs (`digest`: the app changed its calls) is not replayed: the call is made
live, logged once per run.

Places: the n-th model call of an executor in the current superstep (`model:<n>`), a tool call
by its `call_id` (`tool:<call_id>`, stable once the model reply that made it is replayed). The
journal holds only the records of the superstep after the newest committed checkpoint: the
sink deletes the others with each checkpoint that starts a superstep (one transaction), and a
plain agent's (which has no checkpoints, its whole run is re-run) with the response's end. So a
lookup needs no checkpoint id, and a continuation that re-saves the checkpoint it restored
(`awaits_input`) finds the records its first life made after the same restore.

Modules: `run` (the run's journal, its counts, the public helpers a tool uses), `codec` (what a
record holds), `digest` (a call's input), `middleware` (recording and replaying), `install`.

Invariant: a record is written only after the call it records finished (a model stream that
ended, a tool that returned); a replay never stands in for a call whose input differs.
"""

from .codec import recorded_call_ids, recorded_message_ids
from .install import install, journaled, unreachable
from .middleware import JournalChatMiddleware, JournalFunctionMiddleware
from .run import (
    JournalStats,
    RunJournal,
    ToolInterrupted,
    activate,
    not_safe_to_rerun,
    tool_idempotency_key,
)

__all__ = [
    "JournalChatMiddleware",
    "JournalFunctionMiddleware",
    "JournalStats",
    "RunJournal",
    "ToolInterrupted",
    "activate",
    "install",
    "journaled",
    "not_safe_to_rerun",
    "recorded_call_ids",
    "recorded_message_ids",
    "tool_idempotency_key",
    "unreachable",
]
