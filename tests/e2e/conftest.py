"""e2e overrides: request `database_url` before `server_factory` so that, on teardown (LIFO), the
servers are killed before the PostgreSQL database is dropped. With the root `server` fixture's order
(server_factory, database_url) the drop runs while the server still holds pooled connections, and
the server reconnecting between pg_terminate_backend and DROP DATABASE fails teardown with
ObjectInUseError ("There is 1 other session using the database")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import ServerProcess


@pytest.fixture
def server(database_url: str, server_factory: object) -> Iterator[ServerProcess]:
    srv = server_factory(database_url).start()  # type: ignore[operator]
    yield srv
