"""The journal: a response's model and tool calls recorded in the outbox, so a re-run after a
crash replays what finished instead of doing it again.

Job: agent-framework's public chat and function middleware, installed on the run's agents
(`install`: a plain agent's run, the agents of a workflow's agent executors, which include every
agent of the orchestration builders; a custom executor's own agents through `journaled`),
record each call through the run's sink, in the same fenced, ordered writes as its events:
- a model call when its stream ends (its updates, in order; the write is not waited for);
- a tool call twice: its *intent* before it runs, its *done* record (the result) before the
  result goes back to the model (both waited for).
On a re-run (recovery after a crash) the same call, found by its place and with the same input
(`digest`), is replayed: a model call's updates come back in the same order without calling
the model; a done tool call returns its result without running the tool; a tool with only its
intent (the crash hit while it ran) runs again under the same idempotency key
(`tool_idempotency_key`), unless it is marked `not_safe_to_rerun`: then the response fails with
`ToolInterrupted`, and a person decides (an approval-gated tool is not asked again: the
approval was for one run, and whether that run took effect is what nobody knows). A record
whose input differs (the app changed its calls) is not replayed: the call is made live, logged
once per run.

Places: the n-th model call of an executor in the current superstep (`model:<n>`), a tool call
by its `call_id` (`tool:<call_id>`, stable once the model reply that made it is replayed). The
journal holds only the records of the superstep after the newest committed checkpoint: the
sink deletes the others with each checkpoint that starts a superstep (one transaction), and a
plain agent's (which has no checkpoints, its whole run is re-run) with the response's end. So a
lookup needs no checkpoint id, and a continuation that re-saves the checkpoint it restored
(`awaits_input`) finds the records its first life made after the same restore.

Invariant: a record is written only after the call it records finished (a model stream that
ended, a tool that returned); a replay never stands in for a call whose input differs.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_framework import (
    ChatContext,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    FunctionMiddleware,
    ResponseStream,
)
from pydantic import BaseModel

from ..observability import metrics
from ..store import JournalRow

log = logging.getLogger("durable_responses.journal")

__all__ = [
    "JournalChatMiddleware",
    "JournalFunctionMiddleware",
    "RunJournal",
    "ToolInterrupted",
    "install",
    "journaled",
    "not_safe_to_rerun",
    "recorded_message_ids",
    "tool_idempotency_key",
]

# The run whose agents' calls are journaled: set by the driver around `agent.run`, so the
# executors' tasks (which copy the context when created) see it too.
_RUN: contextvars.ContextVar[RunJournal | None] = contextvars.ContextVar(
    "durable_responses_journal", default=None
)
# The idempotency key of the tool call running in this task (see `tool_idempotency_key`).
_TOOL_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
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
    return _TOOL_KEY.get()


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


def _key(response_id: str, executor: str, call_id: str) -> str:
    digest = hashlib.sha256(f"{response_id}\x00{executor}\x00{call_id}".encode()).hexdigest()
    return f"idem_{digest[:40]}"


# -- encoding: updates and contents as compact JSON -------------------------------------------------
#
# agent-framework's own `to_dict()` costs ~0.5 ms per update (its serialization walks every
# field of every content); a model's stream has one update per token. A plain text content
# (the bulk of a stream) is kept as its string, another content as its fields that are plain
# values (read from the object itself: `Content(**fields)` rebuilds it), anything else through
# the framework's own `to_dict()`.

_SIMPLE = (str, int, float, bool)
_UPDATE_FIELDS = (
    "role",
    "author_name",
    "response_id",
    "message_id",
    "merge_mode",
    "conversation_id",
    "model",
    "created_at",
    "finish_reason",
)


def _plain_dict(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, _SIMPLE) for k, v in value.items()
    )


def encode_content(content: Any) -> Any:
    fields = vars(content)
    if (
        fields["type"] == "text"
        and not fields["annotations"]
        and not fields["additional_properties"]
        and fields["raw_representation"] is None
        and not fields["informational_only"]
        and fields["protected_data"] is None
    ):
        return fields["text"]
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "raw_representation" or value is None or value == {} or value == []:
            continue
        if isinstance(value, _SIMPLE) or _plain_dict(value):
            out[key] = value
        else:
            return {"d": content.to_dict()}
    return {"f": out}


def decode_content(value: Any) -> Content:
    if isinstance(value, str):
        return Content.from_text(value)
    if "f" in value:
        return Content(**value["f"])
    return Content.from_dict(value["d"])


def encode_update(update: ChatResponseUpdate) -> dict[str, Any]:
    fields = vars(update)
    if fields.get("continuation_token") is not None or not (
        fields.get("additional_properties") is None or _plain_dict(fields["additional_properties"])
    ):
        return {"d": update.to_dict()}
    out: dict[str, Any] = {"c": [encode_content(c) for c in update.contents]}
    for key in _UPDATE_FIELDS:
        value = fields.get(key)
        if value is not None:
            out[key] = value if isinstance(value, _SIMPLE) else str(value)
    if fields.get("additional_properties"):
        out["ap"] = fields["additional_properties"]
    return out


def decode_update(value: dict[str, Any]) -> ChatResponseUpdate:
    if "d" in value:
        return ChatResponseUpdate.from_dict(value["d"])
    kwargs = {k: value[k] for k in _UPDATE_FIELDS if k in value}
    return ChatResponseUpdate(
        contents=[decode_content(c) for c in value["c"]], additional_properties=value.get("ap"), **kwargs
    )


def recorded_message_ids(rows: Sequence[JournalRow]) -> set[str]:
    """The ids of the messages the recorded model calls of `rows` streamed (what a replay of
    them streams again)."""
    found: set[str] = set()
    for row in rows:
        if not row.place.startswith("model:") or row.state != "done":
            continue
        body = json.loads(row.data)
        for update in body.get("updates", ()):
            fields = update.get("d", update)
            if isinstance(fields.get("message_id"), str):
                found.add(fields["message_id"])
    return found


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=repr)


# -- digests: the input a record stands for ------------------------------------------------------

# Keys that differ between two runs of the same call (ids the framework or the service makes
# fresh, such as a tool result's occurrence id `af-call-...`; raw provider objects). A call is
# still told apart by its `call_id`.
_VOLATILE = frozenset(
    {
        "additional_properties",
        "raw_representation",
        "message_id",
        "response_id",
        "created_at",
        "annotations",
        "id",
    }
)


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, Content):
        # Its fields that have a value, whichever way it was made (streamed live with its raw
        # chunk, or read back from a checkpoint or a record without it).
        return {
            k: _canonical(v)
            for k, v in vars(value).items()
            if k not in _VOLATILE and v is not None and v is not False and v != {} and v != []
        }
    if isinstance(value, BaseModel):
        return _canonical(value.model_dump(mode="json"))
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return _canonical(value.to_dict())
    if value is None or isinstance(value, _SIMPLE):
        return value
    return repr(value)


def _hash(value: Any) -> str:
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def model_digest(messages: Sequence[Any], options: Mapping[str, Any] | None) -> str:
    opts = options or {}
    tools = sorted(str(getattr(t, "name", t)) for t in (opts.get("tools") or ()))
    return _hash(
        {
            "messages": [
                {"role": str(getattr(m, "role", "")), "contents": list(getattr(m, "contents", ()))}
                for m in messages
            ],
            "instructions": opts.get("instructions"),
            "tools": tools,
        }
    )


def tool_digest(name: str, arguments: Any) -> str:
    return _hash({"name": name, "arguments": arguments})


# -- the run's journal ---------------------------------------------------------------------------

Record = Callable[[list[JournalRow], bool], "asyncio.Future[None]"]


@dataclass
class JournalStats:
    """The journal's counts over the response's lives (kept on its row, `responses.journal`)."""

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
        return json.dumps({"recorded": self.recorded, "replayed": self.replayed, "rerun": self.rerun})


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
        self.baseline = self.stats.json()
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
            self.stats.recorded += 1
            metrics.JOURNAL_CALLS.inc(outcome="recorded")
        return self.record([row], wait)

    def replayed(self) -> None:
        self.stats.replayed += 1
        metrics.JOURNAL_CALLS.inc(outcome="replayed")

    def rerun(self) -> None:
        self.stats.rerun += 1
        metrics.JOURNAL_CALLS.inc(outcome="rerun")


def activate(journal: RunJournal | None) -> None:
    """Make `journal` the one this task's (and the tasks it spawns) agents record in."""
    _RUN.set(journal)


# -- the middleware -------------------------------------------------------------------------------


class JournalChatMiddleware(ChatMiddleware):
    """Records each model call of `executor` when its stream ends; replays a recorded one."""

    def __init__(self, executor: str) -> None:
        self.executor = executor

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        journal = _RUN.get()
        if journal is None:
            await call_next()
            return
        executor = self.executor
        place = journal.next_model_place(executor)
        digest = model_digest(context.messages, context.options)
        row = journal.find(executor, place, digest)
        options = context.options or {}
        if row is not None and row.state == "done":
            journal.replayed()
            body = json.loads(row.data)
            if context.stream:
                updates = [decode_update(u) for u in body["updates"]]
                context.result = _replay_stream(updates, options.get("response_format"))
            else:
                context.result = ChatResponse.from_dict(body["response"])
            return
        await call_next()
        result = context.result
        if isinstance(result, ResponseStream):
            seen: list[dict[str, Any]] = []

            def keep(update: ChatResponseUpdate) -> ChatResponseUpdate:
                seen.append(encode_update(update))
                return update

            def ended(response: ChatResponse[Any]) -> None:
                # Only a stream that ran to its end has a final response.
                data = _dumps({"updates": seen})
                journal.write(executor, place, "done", digest, data, wait=False)

            context.stream_transform_hooks.append(keep)
            context.stream_result_hooks.append(ended)
        elif isinstance(result, ChatResponse):
            data = _dumps({"response": result.to_dict()})
            journal.write(executor, place, "done", digest, data, wait=False)


def _replay_stream(
    updates: list[ChatResponseUpdate], response_format: Any
) -> ResponseStream[ChatResponseUpdate, ChatResponse[Any]]:
    async def replay() -> Any:
        for update in updates:
            yield update

    return ResponseStream(
        replay(), finalizer=lambda ups: ChatResponse.from_updates(ups, output_format_type=response_format)
    )


def _encode_result(result: Any) -> str:
    if isinstance(result, list) and all(isinstance(c, Content) for c in result):
        return _dumps({"contents": [encode_content(c) for c in result]})
    if isinstance(result, str):
        return json.dumps({"text": result})
    try:
        return json.dumps({"value": result}, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps({"text": str(result)})


def _decode_result(data: str) -> Any:
    body = json.loads(data)
    if "contents" in body:
        return [decode_content(c) for c in body["contents"]]
    if "text" in body:
        return body["text"]
    return body.get("value")


def _arguments(context: FunctionInvocationContext) -> Any:
    args = context.arguments
    if isinstance(args, BaseModel):
        return args.model_dump(mode="json")
    return dict(args) if isinstance(args, Mapping) else args


class JournalFunctionMiddleware(FunctionMiddleware):
    """Records each tool call of `executor` (intent, then result); answers a recorded one."""

    def __init__(self, executor: str) -> None:
        self.executor = executor

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        journal = _RUN.get()
        call_id = context.metadata.get("call_id")
        if journal is None or not isinstance(call_id, str) or not call_id:
            await call_next()
            return
        executor = self.executor
        name = context.function.name
        place = f"tool:{call_id}"
        digest = tool_digest(name, _arguments(context))
        row = journal.find(executor, place, digest)
        if row is not None and row.state == "done":
            journal.replayed()
            context.result = _decode_result(row.data)
            return
        if row is not None:  # its intent only: the crash hit while it ran
            props = getattr(context.function, "additional_properties", None) or {}
            if props.get(RERUN_MARK) is False:
                raise ToolInterrupted(
                    f"The tool {name!r} (call {call_id}) was running when the server stopped, and it is "
                    "marked not safe to run again: whether it took effect is unknown. Check its effect, "
                    "then send the request again."
                )
            journal.rerun()
        else:
            intent = journal.write(executor, place, "intent", digest, "null", wait=True)
            if intent is not None:
                await intent
        token = _TOOL_KEY.set(_key(journal.response_id, executor, call_id))
        try:
            await call_next()
        finally:
            _TOOL_KEY.reset(token)
        done = journal.write(executor, place, "done", digest, _encode_result(context.result), wait=True)
        if done is not None:
            await done


# -- installing ----------------------------------------------------------------------------------


def _middleware_for(executor: str) -> list[Any]:
    return [JournalChatMiddleware(executor), JournalFunctionMiddleware(executor)]


def journaled(agent: Any, name: str | None = None) -> Any:
    """Journal the model and tool calls of `agent` (an agent-framework `Agent`) when it runs for
    a hosted response: for a custom executor that builds its own agent, which the host cannot
    reach. `name` tells its calls apart from other agents' in the same superstep (default: the
    agent's name). Returns the agent."""
    _attach(agent, name or getattr(agent, "name", None) or "agent")
    return agent


def _ours(m: Any) -> bool:
    return isinstance(m, (JournalChatMiddleware, JournalFunctionMiddleware))


def _attach(agent: Any, executor: str) -> bool:
    """Put the journal's middleware on `agent`'s chat client (its public `chat_middleware` and
    `function_middleware` lists), replacing any earlier one: a client's own middleware composes
    with what a run passes per call (`client_kwargs`), while an agent's own (`agent.middleware`)
    replaces that in agent-framework 1.23, which would drop the host's request options. Outermost,
    so a replayed call skips whatever would happen to a live one. An agent without such a client
    gets it in `agent.middleware`."""
    client = getattr(agent, "client", None)
    chat, function = getattr(client, "chat_middleware", None), getattr(client, "function_middleware", None)
    if isinstance(chat, list) and isinstance(function, list):
        assert client is not None
        client.chat_middleware = [JournalChatMiddleware(executor), *(m for m in chat if not _ours(m))]
        client.function_middleware = [
            JournalFunctionMiddleware(executor),
            *(m for m in function if not _ours(m)),
        ]
        return True
    if not hasattr(agent, "middleware"):
        return False
    agent.middleware = [*_middleware_for(executor), *(m for m in (agent.middleware or []) if not _ours(m))]
    return True


def install(agent: Any, *, is_workflow: bool) -> dict[str, Any]:
    """Journal the agents of a run: a workflow's agent executors' agents (middleware added to
    each client, idempotent), or a plain agent (returns the `middleware` argument for its
    `run`). Returns the keyword arguments to add to `agent.run`."""
    if not is_workflow:
        if hasattr(agent, "middleware"):
            return {"middleware": _middleware_for(getattr(agent, "name", None) or "agent")}
        return {}
    workflow = getattr(agent, "workflow", None)
    # An executor's calls are told apart by its id; agents that share one client share a key
    # (their places then interleave only if they run in the same superstep, and a record whose
    # input differs is never replayed).
    by_client: dict[int, list[str]] = {}
    agents: dict[int, Any] = {}
    for executor_id, executor in (getattr(workflow, "executors", None) or {}).items():
        inner = getattr(executor, "agent", None)
        if inner is not None:
            key = id(getattr(inner, "client", None) or inner)
            by_client.setdefault(key, []).append(str(executor_id))
            agents.setdefault(key, inner)
    for key, ids in by_client.items():
        _attach(agents[key], "+".join(sorted(ids)))
    return {}


def unreachable(agent: Any, *, is_workflow: bool) -> list[str]:
    """The app's own executors that are not agent executors (a workflow), or the app itself (an
    agent without agent-framework's middleware): agents they build themselves opt in with
    `journaled`. The framework's own executors (an orchestration's adapters) are left out."""
    if not is_workflow:
        return [] if hasattr(agent, "middleware") else [getattr(agent, "name", None) or type(agent).__name__]
    workflow = getattr(agent, "workflow", None)
    executors = getattr(workflow, "executors", None)
    if not isinstance(executors, dict):  # a functional workflow: its steps call agents themselves
        return [getattr(agent, "name", None) or type(agent).__name__]
    return [
        str(executor_id)
        for executor_id, executor in executors.items()
        if getattr(executor, "agent", None) is None
        and not type(executor).__module__.startswith("agent_framework")
    ]
