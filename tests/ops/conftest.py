"""Fixtures of the operations tests: servers in subprocesses (they must be killable and own
their process-wide telemetry), stopped after each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import ServerProcess


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for srv in started:
        srv.kill()


def start(
    started: list[ServerProcess], url: str, app: str | None, tmp_path: Path, **kwargs: object
) -> ServerProcess:
    srv = ServerProcess(database_url=url, app=app, workdir=tmp_path / f"work-{len(started)}", **kwargs)  # type: ignore[arg-type]
    started.append(srv)
    return srv.start()
