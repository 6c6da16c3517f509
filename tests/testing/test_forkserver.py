"""The test suite's fork server (`tests/support/forkserver.py`): a forked server is as much of a
`subprocess.Popen` as the tests use, from several threads at once (a load thread polls the server
a test's own thread kills and waits for)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import forkserver
from tests.support.servers import ServerProcess


def test_a_forked_server_is_polled_from_one_thread_while_another_kills_and_waits(
    tmp_path: Path, server_factory: Callable[..., ServerProcess]
) -> None:
    srv = server_factory(f"sqlite:///{tmp_path / 'db' / 'durable-responses.db'}").start()
    proc: Any = srv.proc
    assert isinstance(proc, forkserver.Forked), "the suite's servers are forks"
    stop = threading.Event()
    # What each poller saw, in order: a thread may see the server alive late (its poll ran
    # before the kill and it appended after), never alive again after it saw the exit.
    polled: list[list[int | None]] = [[] for _ in range(3)]
    errors: list[BaseException] = []

    def poll(seen: list[int | None]) -> None:
        try:
            while not stop.is_set():
                seen.append(proc.poll())
        except BaseException as exc:  # what the other thread would see
            errors.append(exc)

    pollers = [threading.Thread(target=poll, args=(seen,)) for seen in polled]
    for t in pollers:
        t.start()
    try:
        srv.kill()
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        stop.set()
        for t in pollers:
            t.join(10)
    assert errors == []
    assert proc.poll() == -signal.SIGKILL
    for seen in polled:
        exited = [code for code in seen if code is not None]
        assert set(exited) <= {-signal.SIGKILL}, seen
        assert seen[len(seen) - len(exited) :] == exited, "alive again after its exit was seen"
