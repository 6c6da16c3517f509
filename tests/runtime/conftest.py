"""Runtime tests that need a real store use the store suite's fixtures (both dialects)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.runtime.gated_app import GATE
from tests.store.conftest import (  # noqa: F401 - fixtures, found by name
    db_url,
    pg_server,
    pg_url,
    sqlite_template,
    sqlite_url,
    store,
    store_factory,
)


@pytest.fixture
async def gate() -> AsyncIterator[asyncio.Event]:
    """The event `tests.runtime.gated_app`'s held tick waits for; set at teardown."""
    GATE[:] = [asyncio.Event()]
    yield GATE[0]
    GATE[0].set()
    GATE.clear()
