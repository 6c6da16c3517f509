"""The walk of one `POST /v1/responses` with `background=true, stream=true`, from the HTTP
handler to the first event sent, reads nothing twice: every statement the store's engines run
for it is recorded with its parameters (a SQLAlchemy listener on the real engines; the reads on
the driver's connection, which bypass SQLAlchemy, through the store methods that make them:
`DRIVER_READS`), on a real server (uvicorn,
SQLite and PostgreSQL) driven by the openai client. A fresh turn, and the turn that answers a
paused workflow (the response it follows, its pending requests, the checkpoint it restores), and
the first turn of a conversation id the server has not seen.

The walk is the request's own task and the tasks it starts (they copy its context: the run, the
relay); it ends when the first frame with an event is handed to the server to send."""

from __future__ import annotations

import contextvars
import functools
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event

from durable_responses.service import Service
from tests.support.inprocess import InProcessServer
from tests.support.responses import wait_terminal

Read = tuple[str, str]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

APP = "durable_responses.examples.approval:approval"
# The store's reads that may run on the driver's own connection (`Database.driver_reads`).
DRIVER_READS = ("read_events", "get_response", "output_items", "response_with_output")


@dataclass
class Walk:
    reads: list[Read] = field(default_factory=list)
    open: bool = True


_WALK: contextvars.ContextVar[Walk | None] = contextvars.ContextVar("walk", default=None)


def _is_read(statement: str) -> bool:
    return statement.lstrip().split(None, 1)[0].upper() in ("SELECT", "WITH")


def _on_execute(
    conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
) -> None:
    walk = _WALK.get()
    if walk is not None and walk.open and _is_read(statement):
        walk.reads.append((" ".join(statement.split()), repr(parameters)))


class Recorder:
    """Wraps the built service: its engines listened to, its `DRIVER_READS` recorded, and each
    `POST .../responses` walked (`walks`, one per request, in order)."""

    def __init__(self) -> None:
        self.walks: list[Walk] = []

    def __call__(self, service: Service) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
        db = service.store.db
        for engine in {id(db.reader): db.reader, id(db.writer): db.writer}.values():
            event.listen(engine.sync_engine, "before_cursor_execute", _on_execute)
        store = service.store
        for name in DRIVER_READS:
            setattr(store, name, _recorded(name, getattr(store, name)))
        app = service.app

        async def walked(scope: Scope, receive: Receive, send: Send) -> None:
            if (
                scope["type"] != "http"
                or scope["method"] != "POST"
                or not scope["path"].endswith("/responses")
            ):
                await app(scope, receive, send)
                return
            walk = Walk()
            self.walks.append(walk)

            async def send_closing(message: Message) -> None:
                if message["type"] == "http.response.body" and b"event:" in message.get("body", b""):
                    walk.open = False
                await send(message)

            token = _WALK.set(walk)
            try:
                await app(scope, receive, send_closing)
            finally:
                _WALK.reset(token)

        return walked


def _recorded(name: str, read: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """`read` (a store method), recorded as `name` and its arguments in the current walk."""

    @functools.wraps(read)
    async def recorded(*args: Any, **kwargs: Any) -> Any:
        walk = _WALK.get()
        if walk is not None and walk.open:
            walk.reads.append((name, repr((args, sorted(kwargs.items())))))
        return await read(*args, **kwargs)

    return recorded


def _first_event(server: InProcessServer, **body: Any) -> tuple[str, str]:
    """Create a background, streamed response; read to its first event and close the stream:
    the response's id and the first event's type."""
    stream = server.client().responses.create(model="approval", background=True, stream=True, **body)
    try:
        first = next(iter(stream))
    finally:
        stream.close()
    return first.response.id, first.type  # type: ignore[union-attr]


def _repeated(reads: list[Read]) -> dict[Read, int]:
    return {read: n for read, n in Counter(reads).items() if n > 1}


def test_a_background_stream_post_reads_nothing_twice(
    database_url: str, inproc_factory: Callable[..., InProcessServer]
) -> None:
    recorder = Recorder()
    server = inproc_factory(database_url, APP, wrap=recorder)

    first, kind = _first_event(server, input="ship it")
    assert kind == "response.created"
    [walk] = recorder.walks
    assert not walk.open  # the walk ended at the first event
    assert not _repeated(walk.reads), (_repeated(walk.reads), walk.reads)

    paused = wait_terminal(server.client(), first)
    asked = [o.call_id for o in paused.output if o.type == "function_call"]
    assert asked, "the approval workflow pauses for a request"
    second, kind = _first_event(
        server,
        previous_response_id=first,
        input=[{"type": "function_call_output", "call_id": asked[0], "output": "yes"}],
    )
    assert kind == "response.created" and second != first
    walk = recorder.walks[-1]
    assert not _repeated(walk.reads), (_repeated(walk.reads), walk.reads)
    # Not vacuous: the continuation read the response it follows and its pending requests.
    tables = " ".join(statement for statement, _ in walk.reads)
    read_response = "FROM responses" in tables or any(name == "get_response" for name, _ in walk.reads)
    assert read_response and "FROM pending_requests" in tables, walk.reads

    # A conversation id's first use (a platform's own id): it is looked up once, and created with
    # the response, in the creation's own write.
    conv = f"conv_{uuid.uuid4().hex}"
    _, kind = _first_event(server, input="ship this too", conversation=conv)
    assert kind == "response.created"
    walk = recorder.walks[-1]
    assert not _repeated(walk.reads), (_repeated(walk.reads), walk.reads)
    assert server.client().conversations.retrieve(conv).id == conv
