"""Runtime tests that need a real store use the store suite's fixtures (both dialects)."""

from tests.store.conftest import (  # noqa: F401 - fixtures, found by name
    db_url,
    pg_server,
    pg_url,
    sqlite_template,
    sqlite_url,
    store,
    store_factory,
)
