"""Assembling the server from its settings: the store, the host (runtime) and the ASGI app.

Job: the one place that wires the layers together, for `durable-responses serve`, for tests
that run the server in-process, and for embedders (`build_app`).

Invariant: a server never starts on a schema it does not match: `prepare` migrates an embedded
SQLite database itself and refuses a PostgreSQL database that is behind, naming the command to
run, or that it cannot use as configured (unreachable, TLS or credentials refused, a pooler in
transaction mode with prepared statements forced on), saying what to do; it also refuses an
agent-framework that the private-name quarantine does not match.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.applications import Starlette

from .http.app import create_app
from .runtime._af_private import check_compatibility, quiet_repeated_build_warnings
from .runtime.apps.apps import AppError, HostedApp, load_apps
from .runtime.host import Host
from .settings import Settings
from .store import BadDatabaseURL, SchemaOutOfDate, Store, normalize_url
from .store.errors import DatabaseSetupError
from .store.ops.migrate import upgrade
from .store.ops.preflight import check_database

__all__ = ["Service", "StartupError", "build", "build_app", "prepare"]


class StartupError(Exception):
    """The server cannot start as configured; the message says why and what to do."""


@dataclass
class Service:
    store: Store
    host: Host
    app: Starlette


def prepare(settings: Settings) -> list[tuple[str, HostedApp]]:
    """Check the framework, load the apps (each with its name), bring the schema up to date
    (SQLite) or check it."""
    try:
        check_compatibility()
        quiet_repeated_build_warnings()
        app = load_apps(settings.runtime.app)
        url = settings.store.database_url
        if normalize_url(url).get_backend_name() == "sqlite":
            upgrade(url)
        else:
            check_database(url, settings.store.connection_options())
    except (AppError, BadDatabaseURL, SchemaOutOfDate, DatabaseSetupError, RuntimeError) as exc:
        # One line: what, why and what to do (an exception's own message may span lines).
        raise StartupError(" ".join(str(exc).split())) from exc
    return app


def build(settings: Settings, app: HostedApp | list[tuple[str, HostedApp]] | None = None) -> Service:
    """The store, host and ASGI app for `settings` (the app's lifespan starts and stops the host)."""
    hosted = app if app is not None else prepare(settings)
    store = Store.open(
        settings.store.database_url,
        connection=settings.store.connection_options(),
        lease_seconds=settings.store.lease_seconds,
        commit_window=settings.store.commit_window,
    )
    store.retention.schedule(
        settings.store.retention_seconds,
        interval=settings.store.retention_interval,
        batch=settings.store.retention_batch,
    )
    host = Host(store, hosted, settings.runtime)
    return Service(store, host, create_app(host, settings.http))


def build_app(settings: Settings | None = None) -> Starlette:
    """An ASGI app for `settings` (default: from the environment), for embedding in any server."""
    return build(settings or Settings.from_env()).app
