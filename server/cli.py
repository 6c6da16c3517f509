"""The `durable-responses` command: `serve` and `migrate`.

Invariant: `serve` never starts on a schema it does not match: it migrates an embedded SQLite
database itself and refuses a PostgreSQL database that is behind, naming the command to run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import sys
from collections.abc import Sequence
from types import FrameType

import uvicorn

from .config import Settings
from .runtime.host import Host


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durable-responses", description=__doc__)
    sub = p.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the server")
    serve.add_argument("--app", help="MODULE:ATTR of a zero-argument factory (env DURABLE_RESPONSES_APP)")
    serve.add_argument("--database-url", help="SQLAlchemy database URL (env DATABASE_URL)")
    serve.add_argument("--host", help="interface to bind (env HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (env PORT, default 8088)")
    serve.add_argument("--delivery", choices=["live", "durable"], help="event delivery mode")
    serve.add_argument(
        "--allow-checkpoint-type",
        action="append",
        default=[],
        metavar="MODULE:QUALNAME",
        help="allow a custom type in workflow checkpoints (repeatable)",
    )
    serve.add_argument("--log-level", default="info")
    mig = sub.add_parser("migrate", help="upgrade the database schema to the newest revision")
    mig.add_argument("--database-url", help="SQLAlchemy database URL (env DATABASE_URL)")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    settings = Settings.from_env()
    command = args.command or "serve"
    if getattr(args, "database_url", None):
        settings.database_url = args.database_url
    if command == "migrate":
        sys.exit(_migrate(settings.database_url))
    if args.command is None:
        args = _parser().parse_args(["serve"])
    if args.app:
        settings.app = args.app
    if args.host:
        settings.host = args.host
    if args.port:
        settings.port = args.port
    if args.delivery:
        settings.delivery = args.delivery
    if settings.delivery not in ("live", "durable"):
        sys.exit(f"delivery must be live or durable, got {settings.delivery!r}")
    settings.allowed_checkpoint_types += tuple(args.allow_checkpoint_type)
    sys.exit(_serve(settings, args.log_level))


def _migrate(url: str) -> int:
    from .store import BadDatabaseURL
    from .store.migrate import head_revision, redact_url, upgrade

    try:
        before, after = upgrade(url)
    except BadDatabaseURL as exc:
        print(f"durable-responses migrate: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"durable-responses migrate: could not migrate {redact_url(url)}: {exc}", file=sys.stderr)
        return 1
    if before == after:
        print(f"{redact_url(url)}: schema already at {after} (head {head_revision()}); nothing applied")
    else:
        print(f"{redact_url(url)}: migrated from {before or 'empty'} to {after}")
    return 0


def _serve(settings: Settings, log_level: str) -> int:
    from .http.app import HttpSettings, create_app
    from .runtime._af_private import check_compatibility
    from .runtime.apps import AppError, HostedApp
    from .runtime.host import HostSettings
    from .store import BadDatabaseURL, SchemaOutOfDate, Store, normalize_url
    from .store.migrate import check_schema, redact_url, upgrade

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("durable_responses")
    switch_interval_ms = _env_ms("DURABLE_RESPONSES_SWITCH_INTERVAL_MS", 0.5)
    try:
        check_compatibility()
        app_spec = HostedApp.load(settings.app)
        url = normalize_url(settings.database_url)
        if url.get_backend_name() == "sqlite":
            upgrade(settings.database_url)
        else:
            check_schema(settings.database_url)
    except (AppError, BadDatabaseURL, SchemaOutOfDate, RuntimeError) as exc:
        print(f"durable-responses serve: {exc}", file=sys.stderr)
        return 2

    store = Store.open(
        settings.database_url,
        lease_seconds=settings.lease_seconds,
        commit_window=settings.commit_window_ms / 1000,
    )
    host = Host(
        store,
        app_spec,
        HostSettings(
            delivery=settings.delivery,
            lease_seconds=settings.lease_seconds,
            recovery_interval=settings.recovery_interval,
            allowed_checkpoint_types=settings.allowed_checkpoint_types,
            shutdown_grace_seconds=settings.shutdown_grace_seconds,
            max_inflight=settings.max_inflight,
        ),
    )
    app = create_app(
        host,
        HttpSettings(
            api_key=settings.api_key,
            principal_keys=settings.principal_keys,
            max_body_bytes=settings.max_body_bytes,
            keepalive_seconds=settings.keepalive_seconds,
        ),
    )
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds) + 5,
        lifespan="on",
    )
    # uvicorn's choice of event loop ("auto": uvloop, a dependency of this package, where it runs).
    loop_factory = config.get_loop_factory()
    log.info(
        "serving %s on http://%s:%s with %s (%s delivery, event loop: %s, GIL switch interval: %g ms)",
        app_spec.spec,
        settings.host,
        settings.port,
        redact_url(settings.database_url),
        settings.delivery,
        "asyncio" if loop_factory is None else loop_factory.__module__.split(".")[0],
        switch_interval_ms,
    )
    server = _Server(config, host)
    # Everything loaded so far lives as long as the process: keep it out of the garbage
    # collector's full passes, whose cost would otherwise grow with it on every long response.
    gc.collect()
    gc.freeze()
    # SQLite's writer thread needs the GIL back after every statement of a commit; while an
    # agent keeps the event loop busy, the interpreter hands it over only every switch interval
    # (5 ms by default): a checkpoint commit started before a 15 ms superstep finished after it,
    # and the next commit (a live stream's first output) queued behind it. At 0.5 ms that first
    # output went out ~1.2 ms sooner (median of 4x60 paired requests); with no other thread
    # wanting the GIL (PostgreSQL) the interval changes nothing.
    sys.setswitchinterval(switch_interval_ms / 1000)
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(server.serve())
    return 0


def _env_ms(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise SystemExit(f"{name} must be a number of milliseconds, got {raw!r}") from None
    if value <= 0:
        raise SystemExit(f"{name} must be above 0, got {raw!r}")
    return value


class _Server(uvicorn.Server):
    """uvicorn, plus: the first SIGTERM/SIGINT also starts the host's drain at once."""

    def __init__(self, config: uvicorn.Config, host: Host) -> None:
        super().__init__(config)
        self._host = host

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            loop.call_soon_threadsafe(self._host.begin_shutdown)
        super().handle_exit(sig, frame)
