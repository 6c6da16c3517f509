"""The real server in the test's own process: `server.build(settings)` under uvicorn, on a free
loopback port, in a thread with its own event loop (uvloop, as `serve` runs it).

For runtime and protocol behaviour that needs no process to die: no interpreter start-up, no
app import per test, no polling of a subprocess's readiness. Clients (the real `openai` SDK,
httpx) talk to it over real TCP, exactly as they talk to `durable-responses serve`.
Tests that `kill -9` a server use `servers.ServerProcess` instead.

Settings come from `env` only (plus `TEST_ENV` and the database, port and app given here),
never from the test process's environment. The apps under `tests/apps` read their recording
variables (`RECORD_RUN_CALLS`, ...) from `os.environ`: a test sets those with `monkeypatch`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import uvicorn

from durable_responses.http.websocket import ws_max_size
from durable_responses.service import Service, build
from durable_responses.settings import Settings

from .servers import RUNNING, TEST_ENV, free_port

__all__ = ["TEST_ENV", "InProcessServer"]


class _ThreadLog(logging.Handler):
    """Records of the server's loggers emitted on the server's own thread (its event loop)."""

    def __init__(self, thread_name: str) -> None:
        super().__init__(level=logging.DEBUG)
        self.thread_name = thread_name
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.threadName == self.thread_name:
            self.lines.append(self.format(record))


class InProcessServer:
    def __init__(
        self,
        database_url: str,
        app: str | None = None,
        *,
        delivery: str = "live",
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        wrap: Callable[[Service], Any] | None = None,
    ) -> None:
        self.database_url = database_url
        self.app = app
        # The ASGI app uvicorn serves, given the built service (default: its own app).
        self._wrap = wrap
        self.port = port or free_port()
        environ = {**TEST_ENV, **(env or {})}
        environ.update(
            {
                "DATABASE_URL": database_url,
                "DURABLE_RESPONSES_DELIVERY": delivery,
                "PORT": str(self.port),
                "HOST": "127.0.0.1",
            }
        )
        if app:
            environ["DURABLE_RESPONSES_APP"] = app
        self.settings = Settings.from_env(environ)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._log = _ThreadLog(f"server-{self.port}")
        self.service: Service | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 30) -> InProcessServer:
        self.service = build(self.settings)
        config = uvicorn.Config(
            self._wrap(self.service) if self._wrap is not None else self.service.app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=int(self.settings.runtime.shutdown_grace_seconds) + 5,
            ws_max_size=ws_max_size(self.settings.http),  # as `serve` sets it
        )
        server = uvicorn.Server(config)
        self._server = server
        loop_factory = config.get_loop_factory()

        def serve() -> None:
            try:
                with asyncio.Runner(loop_factory=loop_factory) as runner:
                    self._loop = runner.get_loop()
                    runner.run(server.serve())
            except BaseException as exc:  # surfaced by start()/stop()
                self._error = exc

        logging.getLogger("durable_responses").addHandler(self._log)
        self._thread = threading.Thread(target=serve, name=self._log.thread_name, daemon=True)
        self._thread.start()
        RUNNING.append(self)
        deadline = time.monotonic() + timeout
        while not server.started:
            if self._error is not None or not self._thread.is_alive():
                self._forget()
                raise RuntimeError(f"in-process server failed to start: {self._error!r}")
            if time.monotonic() > deadline:
                self._forget()
                raise RuntimeError("in-process server did not start in time")
            time.sleep(0.005)
        return self

    def run_in_loop(self, fn: Any, timeout: float = 30) -> Any:
        """Run `fn()` (sync, or returning an awaitable) on the server's event loop; its result."""
        assert self._loop is not None

        async def call() -> Any:
            result = fn()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                result = await result
            return result

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(timeout)

    def stop(self, timeout: float = 30) -> None:
        """A graceful stop, as SIGTERM gives `serve` (the host drains, then releases its leases)."""
        if self._server is None or self._thread is None:
            self._forget()
            return
        if self._loop is not None and self._loop.is_running() and self.service is not None:
            # As `serve`'s signal handler does: the drain starts at once (uvicorn waits for open
            # streams before it runs the app's shutdown).
            self._loop.call_soon_threadsafe(self.service.host.begin_shutdown)
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(10)
        self._server = None
        self._forget()
        if self._error is not None and not isinstance(self._error, SystemExit | KeyboardInterrupt):
            raise RuntimeError(f"in-process server crashed: {self._error!r}") from self._error

    def _forget(self) -> None:
        logging.getLogger("durable_responses").removeHandler(self._log)
        if self in RUNNING:
            RUNNING.remove(self)

    def log(self) -> str:
        """What the server logged (warnings and errors; its loggers' level decides)."""
        return "\n".join(self._log.lines[-200:])

    def client(self, **kwargs: Any) -> Any:
        from openai import OpenAI

        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("timeout", 60)
        return OpenAI(base_url=self.base_url, api_key="test-key", **kwargs)

    def __enter__(self) -> InProcessServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
