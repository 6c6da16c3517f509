"""The fake model's ASGI app: routes, request recording, and the JSON or SSE replies.

`create_app(state)` serves chat completions, the Responses API and the model list over one
`FakeModelState`: every call is recorded there (`FakeCall`), requests OpenAI would refuse are
answered 400 and kept in `state.refused`, and Responses replies are stored so that
`previous_response_id` resolves. Invariant: a call is recorded before its reply is sent, and
`FakeCall.finished` turns true only once the whole reply (with its usage) has been written.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, cast

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import _chat_wire, _responses_wire
from ._prompt import Api, Prompt, PromptError, parse_chat, parse_responses, responses_input_items
from ._rules import ModelError, Reply, Usage, agent_name, reply_for

__all__ = ["MODEL_ID", "FakeCall", "FakeModelState", "RefusedCall", "create_app"]

MODEL_ID = "fake-model"


@dataclass
class FakeCall:
    """One model call: what came in and what the fake answered (`usage` is what it reported)."""

    index: int
    api: Api
    stream: bool
    request: dict[str, Any]
    prompt: Prompt
    reply: Reply
    status: int
    response_id: str
    usage: Usage | None
    agent: str | None
    # The indexes of the calls its server has finished answering (`FakeModelState.finish`),
    # the set every call of that server shares.
    done: AbstractSet[int] = field(default_factory=frozenset, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        """Whether the fake finished answering this call (a cut stream never does)."""
        return self.index in self.done

    @property
    def error(self) -> ModelError | None:
        return self.reply.error

    @property
    def tool_calls(self) -> list[str]:
        return [c.name for c in self.reply.calls]


@dataclass(frozen=True)
class RefusedCall:
    """A request the fake refused before any reply rule ran (malformed, or one OpenAI refuses)."""

    api: Api
    request: dict[str, Any]
    error: ModelError


@dataclass
class FakeModelState:
    """What one fake server holds: the per-token delay, the call log and stored responses."""

    token_delay: float = 0.0
    # Slept before a reply that is not streamed (a non-streaming run has no tokens to slow).
    reply_delay: float = 0.0
    calls: list[FakeCall] = field(default_factory=list)
    refused: list[RefusedCall] = field(default_factory=list)
    stored: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    finished: set[int] = field(default_factory=set)  # the calls answered to their end, by index
    # The agents whose streamed replies stop before their last frame until they are released
    # (`hold`): a test kills its server while such a call is in flight, never just after it.
    held: frozenset[str] = frozenset()

    def record(self, **kwargs: Any) -> FakeCall:
        with self.lock:
            call = FakeCall(index=len(self.calls), done=self.finished, **kwargs)
            self.calls.append(call)
            return call

    def finish(self, call: FakeCall) -> None:
        with self.lock:
            self.finished.add(call.index)

    def slow(self, *, token_delay: float | None = None, reply_delay: float | None = None) -> None:
        """Change the delays while the server runs (each one given)."""
        if token_delay is not None:
            self.token_delay = token_delay
        if reply_delay is not None:
            self.reply_delay = reply_delay

    def hold(self, agents: AbstractSet[str] = frozenset()) -> None:
        """Hold the streamed replies to these agents before their last frame (none: release)."""
        self.held = frozenset(agents)

    def refuse(self, api: Api, body: dict[str, Any], exc: PromptError) -> JSONResponse:
        error = ModelError(400, None, "invalid_request_error", str(exc), exc.param)
        with self.lock:
            self.refused.append(RefusedCall(api, body, error))
        return _error_response(error)


def _error_response(error: ModelError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers={"x-should-retry": "false"})


def _bad_request(message: str, code: str | None = None, param: str | None = None) -> JSONResponse:
    return _error_response(ModelError(400, code, "invalid_request_error", message, param))


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body())
    except ValueError as exc:
        raise PromptError(f"the body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise PromptError("the body must be a JSON object")
    return cast(dict[str, Any], body)


def _new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex


async def _stream(
    state: FakeModelState, call: FakeCall, frames: Iterator[tuple[str, bool]]
) -> AsyncIterator[str]:
    pending = next(frames, None)
    while pending is not None:
        frame, is_token = pending
        following = next(frames, None)
        if is_token and state.token_delay > 0:
            await asyncio.sleep(state.token_delay)
        # Released from a test's thread, where an asyncio.Event of this loop cannot be set.
        while following is None and call.agent is not None and call.agent in state.held:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        yield frame
        pending = following
    state.finish(call)


def _sse_response(state: FakeModelState, call: FakeCall, frames: Iterator[tuple[str, bool]]) -> Response:
    headers = {"cache-control": "no-cache", "x-request-id": _new_id("req_")}
    return StreamingResponse(_stream(state, call, frames), media_type="text/event-stream", headers=headers)


def _chat_handler(state: FakeModelState) -> Callable[[Request], Any]:
    async def handle(request: Request) -> Response:
        try:
            body = await _json_body(request)
        except PromptError as exc:
            return _bad_request(str(exc))
        try:
            prompt = parse_chat(body)
        except PromptError as exc:
            return state.refuse("chat", body, exc)
        reply = reply_for(prompt)
        completion_id = _new_id("chatcmpl-")
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        reported = reply.usage if reply.error is None and (not prompt.stream or include_usage) else None
        call = state.record(
            api="chat",
            stream=prompt.stream,
            request=body,
            prompt=prompt,
            reply=reply,
            status=reply.error.status if reply.error else 200,
            response_id=completion_id,
            usage=reported,
            agent=agent_name(prompt),
        )
        if reply.error is not None:
            state.finish(call)
            return _error_response(reply.error)
        call_ids = [_new_id("call_")[:29] for _ in reply.calls]
        created = int(time.time())
        model = prompt.model
        if not prompt.stream:
            if state.reply_delay > 0:
                await asyncio.sleep(state.reply_delay)
            state.finish(call)
            return JSONResponse(
                _chat_wire.completion(
                    reply, model=model, completion_id=completion_id, created=created, call_ids=call_ids
                )
            )
        chunks = _chat_wire.chunks(
            reply,
            model=model,
            completion_id=completion_id,
            created=created,
            call_ids=call_ids,
            include_usage=include_usage,
        )
        frames = ((f"data: {json.dumps(c)}\n\n", tok) for c, tok in chunks)
        done = iter([("data: [DONE]\n\n", False)])
        return _sse_response(state, call, _chain(frames, done))

    return handle


def _chain(*parts: Iterator[tuple[str, bool]]) -> Iterator[tuple[str, bool]]:
    for part in parts:
        yield from part


def _responses_handler(state: FakeModelState) -> Callable[[Request], Any]:
    async def handle(request: Request) -> Response:
        try:
            body = await _json_body(request)
        except PromptError as exc:
            return _bad_request(str(exc))
        try:
            previous = body.get("previous_response_id")
            if body.get("conversation"):
                return _bad_request("conversations are not supported by the fake model", param="conversation")
            history: list[Mapping[str, Any]] = []
            if previous:
                with state.lock:
                    found = state.stored.get(str(previous))
                if found is None:
                    return _bad_request(
                        f"Previous response with id '{previous}' not found.",
                        code="previous_response_not_found",
                        param="previous_response_id",
                    )
                history = list(found)
            prompt = parse_responses(body, history)
        except PromptError as exc:
            return state.refuse("responses", body, exc)
        reply = reply_for(prompt)
        ids = _responses_wire.Ids(
            response=_new_id("resp_"),
            reasoning=_new_id("rs_"),
            message=_new_id("msg_"),
            calls=tuple((_new_id("fc_"), _new_id("call_")[:29]) for _ in reply.calls),
        )
        call = state.record(
            api="responses",
            stream=prompt.stream,
            request=body,
            prompt=prompt,
            reply=reply,
            status=reply.error.status if reply.error else 200,
            response_id=ids.response,
            usage=reply.usage if reply.error is None else None,
            agent=agent_name(prompt),
        )
        if reply.error is not None:
            state.finish(call)
            return _error_response(reply.error)
        include = prompt.include
        output = _responses_wire.output_items(reply, ids, include)
        if body.get("store", True) is not False:
            with state.lock:
                state.stored[ids.response] = [*history, *responses_input_items(body), *output]
        created = int(time.time())
        if not prompt.stream:
            if state.reply_delay > 0:
                await asyncio.sleep(state.reply_delay)
            state.finish(call)
            obj = _responses_wire.response_object(
                body,
                response_id=ids.response,
                created_at=created,
                status="incomplete" if reply.truncated else "completed",
                output=output,
                usage=reply.usage,
            )
            return JSONResponse(obj)
        events = _responses_wire.events(body, reply, ids, created_at=created, include=include)
        frames = ((f"event: {e['type']}\ndata: {json.dumps(e)}\n\n", tok) for e, tok in events)
        return _sse_response(state, call, frames)

    return handle


async def _models(request: Request) -> Response:
    model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "durable-responses"}
    return JSONResponse({"object": "list", "data": [model]})


def create_app(state: FakeModelState | None = None) -> Starlette:
    """The fake's ASGI app over `state` (a fresh one if not given)."""
    state = state or FakeModelState()
    routes: list[Route] = []
    for prefix in ("/v1", ""):
        routes += [
            Route(f"{prefix}/chat/completions", _chat_handler(state), methods=["POST"]),
            Route(f"{prefix}/responses", _responses_handler(state), methods=["POST"]),
            Route(f"{prefix}/models", _models, methods=["GET"]),
        ]
    app = Starlette(routes=routes)
    app.state.fake = state
    return app
