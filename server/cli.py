"""The `durable-responses` command: `serve`, `migrate`, `purge` and `settings`.

Invariant: flags override environment variables, which override defaults; every one of them
is declared once, in `durable_responses.settings` (`durable-responses settings` lists them).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import sys
from collections.abc import Sequence
from types import FrameType

import uvicorn

from . import workers
from .runtime.host import Host
from .settings import Settings, SettingsError, markdown_table

# The garbage collector's thresholds while serving (see `_serve`).
GC_THRESHOLDS = (10_000, 0, 220)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="durable-responses", description=__doc__)
    sub = p.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the server")
    serve.add_argument(
        "--app",
        action="append",
        help="MODULE:ATTR of a zero-argument factory, or NAME=MODULE:ATTR; repeat it to host several apps, "
        "which requests pick by model (env DURABLE_RESPONSES_APP, comma-separated)",
    )
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
    serve.add_argument(
        "--workers",
        type=int,
        help="server processes sharing the port, PostgreSQL only (env DURABLE_RESPONSES_WORKERS, default 1)",
    )
    serve.add_argument(
        "--reuse-port",
        action="store_true",
        default=None,
        help="bind with SO_REUSEPORT (env DURABLE_RESPONSES_REUSE_PORT; each worker of --workers does)",
    )
    serve.add_argument("--log-level", help="log level (env DURABLE_RESPONSES_LOG_LEVEL, default info)")
    mig = sub.add_parser("migrate", help="upgrade the database schema to the newest revision")
    mig.add_argument("--database-url", help="SQLAlchemy database URL (env DATABASE_URL)")
    purge = sub.add_parser(
        "purge",
        help="delete finished responses older than a duration (with their items, events, checkpoints)",
    )
    purge.add_argument(
        "--older-than",
        required=True,
        metavar="DURATION",
        help="30d, 12h, 90m, 45s; 0s: every finished response",
    )
    purge.add_argument("--dry-run", action="store_true", help="count what would be deleted; change nothing")
    purge.add_argument("--database-url", help="SQLAlchemy database URL (env DATABASE_URL)")
    retire = sub.add_parser(
        "retire",
        help="end (failed) the responses of a retired app version that wait for a replica of it",
    )
    retire.add_argument("--version", required=True, help="the app version whose waiting responses to end")
    retire.add_argument("--app", action="append", help="as for serve (the apps whose responses may be ended)")
    retire.add_argument("--only-app", help="end only this app's responses (when several are hosted)")
    retire.add_argument("--database-url", help="SQLAlchemy database URL (env DATABASE_URL)")
    sub.add_parser("settings", help="list every environment variable with its default (markdown)")
    return p


def settings_from(args: argparse.Namespace) -> Settings:
    """The environment's settings with the command line's flags applied: each section is
    decided first, then the settings are built once from them."""
    env = Settings.from_env()
    store, runtime, http, process = env.store, env.runtime, env.http, env.process
    if getattr(args, "database_url", None):
        store = store.model_copy(update={"database_url": args.database_url})
    if args.command == "retire" and args.app:
        runtime = type(runtime).from_env(None, app=",".join(args.app))
    if args.command == "serve":
        runtime = type(runtime).from_env(
            None,
            app=",".join(args.app) if args.app else None,
            delivery=args.delivery,
            checkpoint_types=(*runtime.checkpoint_types, *args.allow_checkpoint_type),
        )
        http = type(http).from_env(None, host=args.host, port=args.port, reuse_port=args.reuse_port)
        process = type(process).from_env(None, log_level=args.log_level, workers=args.workers)
    return Settings(store=store, runtime=runtime, http=http, process=process, observability=env.observability)


def main(argv: Sequence[str] | None = None) -> None:
    parser = _parser()
    given = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(given)
    if args.command is None:
        given = ["serve", *given]
        args = parser.parse_args(given)
    if args.command == "settings":
        print(markdown_table(), end="")
        return
    try:
        settings = settings_from(args)
    except SettingsError as exc:
        sys.exit(f"durable-responses {args.command}: {exc}")
    if args.command == "migrate":
        sys.exit(_migrate(settings.store.database_url))
    if args.command == "purge":
        sys.exit(_purge(settings, args.older_than, dry_run=args.dry_run))
    if args.command == "retire":
        sys.exit(_retire(settings, args.version, args.only_app))
    sys.exit(_serve(settings, given))


def _migrate(url: str) -> int:
    from .store import BadDatabaseURL
    from .store.ops.migrate import head_revision, redact_url, upgrade

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


def _retire(settings: Settings, version: str, app: str | None) -> int:
    """End the waiting responses of a retired app version through a host that runs no loops."""
    from .service import StartupError, build

    try:
        service = build(settings)
    except StartupError as exc:
        print(f"durable-responses retire: {exc}", file=sys.stderr)
        return 2

    async def run() -> int:
        try:
            return await service.host.recovery.retire(version, app)
        finally:
            await service.store.db.dispose()

    ended = asyncio.run(run())
    print(f"ended {ended} waiting responses of version {version}" + (f" of app {app}" if app else ""))
    return 0


def _purge(settings: Settings, older_than: str, *, dry_run: bool) -> int:
    from .store import Store, normalize_url
    from .store.ops.migrate import check_schema, redact_url, upgrade
    from .store.ops.retention import parse_duration

    try:
        seconds = parse_duration(older_than)
    except ValueError as exc:
        print(f"durable-responses purge: --older-than: {exc}", file=sys.stderr)
        return 2
    url = settings.store.database_url
    try:
        if normalize_url(url).get_backend_name() == "sqlite":
            upgrade(url)
        else:
            check_schema(url, settings.store.connection_options())
    except Exception as exc:
        print(f"durable-responses purge: {redact_url(url)}: {exc}", file=sys.stderr)
        return 2

    async def run() -> list[str]:
        store = Store.open(url, connection=settings.store.connection_options())
        try:
            report = await store.retention.purge(
                seconds, dry_run=dry_run, batch=settings.store.retention_batch
            )
        finally:
            await store.db.dispose()
        lines = report.lines()
        if report.skipped_locked:
            lines.append("stopped: another replica is sweeping now (try again in a moment)")
        return lines

    try:
        print("\n".join(asyncio.run(run())))
    except Exception as exc:
        print(f"durable-responses purge: could not purge {redact_url(url)}: {exc}", file=sys.stderr)
        return 1
    return 0


def _serve(settings: Settings, argv: Sequence[str]) -> int:
    from .http.websocket import ws_max_size
    from .observability import logs, tracing
    from .observability import metrics as otlp_metrics
    from .service import StartupError, build, prepare
    from .settings import LogFormat
    from .store.ops.migrate import redact_url

    log_level = settings.process.log_level
    log_config = logs.configure(
        log_level,
        json_lines=settings.process.log_format == LogFormat.JSON,
        framework_level=settings.process.framework_log_level,
    )
    log = logging.getLogger("durable_responses")
    if settings.process.workers > 1:
        return _supervise(settings, argv)
    # Before anything takes a tracer (the host counts usage from the framework's spans).
    tracing.configure(settings.observability)
    otlp_metrics.configure_otlp(settings.observability)
    try:
        app = prepare(settings)
    except StartupError as exc:
        print(f"durable-responses serve: {exc}", file=sys.stderr)
        return 2
    service = build(settings, app)
    http = settings.http
    config = uvicorn.Config(
        service.app,
        host=http.host,
        port=http.port,
        log_level=log_level,
        log_config=log_config,
        timeout_graceful_shutdown=int(settings.runtime.shutdown_grace_seconds) + 5,
        lifespan="on",
        # WebSocket mode: a message a little over the body limit is answered with a 413 error
        # event; one far over it is refused by the protocol (close 1009).
        ws_max_size=ws_max_size(http),
    )
    # uvicorn's choice of event loop ("auto": uvloop, a dependency of this package, where it runs).
    loop_factory = config.get_loop_factory()
    switch_interval_ms = settings.process.switch_interval_ms
    log.info(
        "serving %s on http://%s:%s with %s (%s delivery, event loop: %s, GIL switch interval: %g ms)",
        ", ".join(a.spec if n == a.name else f"{n}={a.spec}" for n, a in app),
        http.host,
        http.port,
        redact_url(settings.store.database_url),
        settings.runtime.delivery.value,
        "asyncio" if loop_factory is None else loop_factory.__module__.split(".")[0],
        switch_interval_ms,
    )
    server = _Server(config, service.host)
    _tune_interpreter(switch_interval_ms)
    sockets = [workers.bind_reuse_port(http.host, http.port)] if http.reuse_port else None
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(server.serve(sockets=sockets))
    except KeyboardInterrupt:
        # Ctrl+C: uvicorn has shut down gracefully, then re-raises the SIGINT it handled, which
        # asyncio turns into KeyboardInterrupt. A stop the user asked for is not an error.
        pass
    return 0


def _tune_interpreter(switch_interval_ms: float) -> None:
    """The garbage collector and the GIL's switch interval, as a server of streams needs them."""
    # Everything loaded so far lives as long as the process: keep it out of the garbage
    # collector's full passes, whose cost would otherwise grow with it on every long response.
    gc.collect()
    gc.freeze()
    # The young generation is collected every 10,000 allocations instead of 700: a collection
    # stops every stream at once, which is what a p99 inter-token delay sees, and fewer, larger
    # ones cost the same CPU per token. The middle generation every other young collection
    # instead of every 21st: a live response keeps most of what it allocates until it ends
    # (the framework's per-token updates), so survivors pile up there, and a pass over 20
    # collections' worth stops dozens of streams for 50-100 ms where one over two takes under
    # 20 ms. The oldest generation's passes stay as rare as the default's (every ~440 young
    # collections). Measured on 50-100 live streams in the commits that set these figures.
    gc.set_threshold(*GC_THRESHOLDS)
    # SQLite's writer thread needs the GIL back after every statement of a commit; while an
    # agent keeps the event loop busy, the interpreter hands it over only every switch interval
    # (5 ms by default), so a checkpoint commit started before a 15 ms superstep would finish
    # after it, and the next commit (a live stream's first output) would queue behind it. A
    # short interval lets the writer go on between the agent's steps (a live stream's first
    # output goes out ~1.2 ms sooner); with no other thread wanting the GIL (PostgreSQL) it
    # changes nothing.
    sys.setswitchinterval(switch_interval_ms / 1000)


def _supervise(settings: Settings, argv: Sequence[str]) -> int:
    """`--workers N`: refuse SQLite, hold the port, run N single-process `serve`s on it."""
    from .store import BadDatabaseURL, normalize_url

    n = settings.process.workers
    try:
        backend = normalize_url(settings.store.database_url).get_backend_name()
    except BadDatabaseURL as exc:
        print(f"durable-responses serve: {exc}", file=sys.stderr)
        return 2
    refused = workers.refusal(n, backend)
    if refused is not None:
        print(f"durable-responses serve: {refused}", file=sys.stderr)
        return 2
    http = settings.http
    try:
        held = workers.bind_reuse_port(http.host, http.port)
    except OSError as exc:
        print(f"durable-responses serve: cannot bind {http.host}:{http.port}: {exc}", file=sys.stderr)
        return 2
    with held:
        port = held.getsockname()[1]
        # Later flags win in argparse: each worker is this command with one process, on the port.
        child = [*argv, "--workers", "1", "--reuse-port", "--host", http.host, "--port", str(port)]
        return workers.supervise(child, n)


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
