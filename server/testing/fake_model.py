"""A fake OpenAI-compatible model server for tests and benchmarks (no network, no model).

Serves `POST /v1/chat/completions` and `POST /v1/responses` (JSON or SSE streaming, with usage:
the last chat chunk carries it when `stream_options.include_usage` is set, `response.completed`
always does) and `GET /v1/models`, also without the `/v1` prefix. Point agent-framework's real
clients at `FakeModel.base_url`::

    with FakeModel(token_delay=0.0) as fake:
        client = OpenAIChatCompletionClient(model="fake", api_key="k", base_url=fake.base_url)
        mark = fake.mark()
        ...                                  # run agents
        fake.usage_total(since=mark)         # the Usage the fake reported since `mark`
        fake.calls[-1].reply.text            # every call: request body, prompt, reply, usage

Replies are a pure function of the request (see `_rules` for the rules: tool calls when a tool's
name is in the latest user text, text quoting tool results, handoffs, GroupChat and Magentic
manager answers, reasoning, `model_error:<code>` errors, `tokens=N` long replies); ids and
timestamps are fresh on every call. The Responses API keeps every stored response in memory so
`previous_response_id` resolves, as agent-framework's `OpenAIChatClient` uses it within a run.
Errors carry `x-should-retry: false`, so the SDK does not retry what would fail again.
Command line: `python -m server.testing.fake_model --port P [--host H] [--token-delay-ms N]`.
Invariant: every request is recorded before its reply is sent; `FakeCall.finished` turns true
only once the whole reply (and its usage) has been written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import _chat_wire, _responses_wire
from ._prompt import Api, Prompt, PromptError, parse_chat, parse_responses, responses_input_items
from ._rules import ModelError, Reply, Usage, agent_name, reply_for

__all__ = ["FakeCall", "FakeModel", "FakeModelState", "create_app", "main"]

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
    finished: bool = False

    @property
    def error(self) -> ModelError | None:
        return self.reply.error

    @property
    def tool_calls(self) -> list[str]:
        return [c.name for c in self.reply.calls]


@dataclass
class FakeModelState:
    """What one fake server holds: the per-token delay, the call log and stored responses."""

    token_delay: float = 0.0
    calls: list[FakeCall] = field(default_factory=list)
    stored: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, **kwargs: Any) -> FakeCall:
        with self.lock:
            call = FakeCall(index=len(self.calls), **kwargs)
            self.calls.append(call)
            return call


def _error_response(error: ModelError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers={"x-should-retry": "false"})


def _bad_request(message: str, code: str = "invalid_request_error", param: str | None = None) -> JSONResponse:
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
    for frame, is_token in frames:
        if is_token and state.token_delay > 0:
            await asyncio.sleep(state.token_delay)
        yield frame
    call.finished = True


def _sse_response(state: FakeModelState, call: FakeCall, frames: Iterator[tuple[str, bool]]) -> Response:
    headers = {"cache-control": "no-cache", "x-request-id": _new_id("req_")}
    return StreamingResponse(_stream(state, call, frames), media_type="text/event-stream", headers=headers)


def _chat_handler(state: FakeModelState) -> Callable[[Request], Any]:
    async def handle(request: Request) -> Response:
        try:
            body = await _json_body(request)
            prompt = parse_chat(body)
        except PromptError as exc:
            return _bad_request(str(exc))
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
            call.finished = True
            return _error_response(reply.error)
        call_ids = [_new_id("call_")[:29] for _ in reply.calls]
        created = int(time.time())
        model = prompt.model
        if not prompt.stream:
            call.finished = True
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
            return _bad_request(str(exc))
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
            call.finished = True
            return _error_response(reply.error)
        include = prompt.include
        output = _responses_wire.output_items(reply, ids, include)
        if body.get("store", True) is not False:
            with state.lock:
                state.stored[ids.response] = [*history, *responses_input_items(body), *output]
        created = int(time.time())
        if not prompt.stream:
            call.finished = True
            obj = _responses_wire.response_object(
                body,
                response_id=ids.response,
                created_at=created,
                status="completed",
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


class FakeModel:
    """The fake model served by uvicorn on loopback in a background thread.

    `start()`/`stop()` or `with FakeModel() as fake:`. `port=0` picks a free port. `token_delay`
    (seconds, settable while running) is slept before every streamed token.
    """

    def __init__(self, *, token_delay: float = 0.0, host: str = "127.0.0.1", port: int = 0) -> None:
        self.state = FakeModelState(token_delay=token_delay)
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def token_delay(self) -> float:
        return self.state.token_delay

    @token_delay.setter
    def token_delay(self, seconds: float) -> None:
        self.state.token_delay = seconds

    @property
    def calls(self) -> list[FakeCall]:
        """A snapshot of every call so far, oldest first (`FakeCall.index` is its position)."""
        with self.state.lock:
            return list(self.state.calls)

    def mark(self) -> int:
        """The number of calls so far: pass it as `since=` to look only at later calls."""
        with self.state.lock:
            return len(self.state.calls)

    def calls_since(self, since: int = 0, *, agent: str | None = None) -> list[FakeCall]:
        return [c for c in self.calls[since:] if agent is None or c.agent == agent]

    def usage_total(self, since: int = 0, *, agent: str | None = None) -> Usage:
        """The sum of the usage the fake reported in calls `since` on (optionally one agent's)."""
        total = Usage()
        for call in self.calls_since(since, agent=agent):
            if call.usage is not None:
                total = total + call.usage
        return total

    def reset(self) -> None:
        """Forget every call and stored response."""
        with self.state.lock:
            self.state.calls.clear()
            self.state.stored.clear()

    def env(self, api: str = "chat") -> dict[str, str]:
        """The environment the scenario apps in tests/agents read: `FAKE_MODEL_URL`, `FAKE_MODEL_API`."""
        return {"FAKE_MODEL_URL": self.base_url, "FAKE_MODEL_API": api}

    def start(self) -> FakeModel:
        if self._thread is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            create_app(self.state),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=30,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="fake-model", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake model server did not start")
            time.sleep(0.005)
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m server.testing.fake_model", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--token-delay-ms", type=float, default=0.0, help="sleep before every streamed token")
    args = parser.parse_args(argv)
    state = FakeModelState(token_delay=args.token_delay_ms / 1000.0)
    print(f"fake model on http://{args.host}:{args.port}/v1", flush=True)
    uvicorn.run(create_app(state), host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
