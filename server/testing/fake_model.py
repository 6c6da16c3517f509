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
A conversation OpenAI refuses (a tool result that answers no call, a call left without its
result) gets OpenAI's 400 and is kept in `fake.refused`, not in `fake.calls`. Errors carry
`x-should-retry: false`, so the SDK does not retry what would fail again. `fake.env(api)` gives
the `FAKE_MODEL_URL` / `FAKE_MODEL_API` environment the scenario apps in tests/agents read.
Command line: `python -m durable_responses.testing.fake_model --port P [--host H] [--token-delay-ms N]`.
Invariant: every request is recorded before its reply is sent; `FakeCall.finished` turns true
only once the whole reply (and its usage) has been written.
"""

from __future__ import annotations

import argparse
import socket
import threading
import time
from collections.abc import Set as AbstractSet

import uvicorn

from ._app import FakeCall, FakeModelState, RefusedCall, create_app
from ._rules import Usage

__all__ = ["FakeCall", "FakeModel", "FakeModelState", "RefusedCall", "create_app", "main"]


class FakeModel:
    """The fake model served by uvicorn on loopback in a background thread.

    `start()`/`stop()` or `with FakeModel() as fake:`. `port=0` picks a free port. `token_delay`
    (seconds, settable while running) is slept before every streamed token; `hold(agents)` keeps
    those agents' streamed replies from their last frame until released.
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
        self.state.slow(token_delay=seconds)

    def hold(self, agents: AbstractSet[str] = frozenset()) -> None:
        """Hold the streamed replies to these agents before their last frame until `hold()`
        releases them: their calls stay in flight (not `finished`) as long as a test needs."""
        self.state.hold(agents)

    @property
    def reply_delay(self) -> float:
        """Seconds slept before a reply that is not streamed (settable while running)."""
        return self.state.reply_delay

    @reply_delay.setter
    def reply_delay(self, seconds: float) -> None:
        self.state.slow(reply_delay=seconds)

    @property
    def calls(self) -> list[FakeCall]:
        """A snapshot of every call so far, oldest first (`FakeCall.index` is its position)."""
        with self.state.lock:
            return list(self.state.calls)

    @property
    def refused(self) -> list[RefusedCall]:
        """Requests refused with a 400 before any reply (e.g. a tool result that answers no call)."""
        with self.state.lock:
            return list(self.state.refused)

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
            self.state.refused.clear()
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
        prog="python -m durable_responses.testing.fake_model", description=__doc__.split("\n")[0]
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
