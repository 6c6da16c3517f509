"""Nothing in `server/` is patched after its construction (issue 41): no module sets an
attribute of an object other than `self`, grows a list or set another object holds, or
`setattr`s one. A value is built first, then the object is constructed once from it (a run's
parts through their constructors, a report from counted values, settings from decided
sections); an object that counts or grows does so through its own methods.

The only exceptions are the extension points of third-party APIs listed in `ALLOWED`, each
with the reason it is one, and the one quarantine of agent-framework's private names
(`runtime/_af_private/`, pinned per supported release by `tests/runtime/test_af_private.py`).
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parent.parent / "server"
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault"}

# Where a patch is agent-framework's private API, overridden in its one quarantine: every such
# override is pinned by name per supported release (tests/runtime/test_af_private.py).
QUARANTINE = "runtime/_af_private/"

# (module under server/, what it sets) -> why that is a third-party API's extension point.
ALLOWED: dict[tuple[str, str], str] = {
    ("http/app.py", "app.state.host"): "Starlette: `app.state` holds an application's own objects for "
    "its handlers (`request.app.state`)",
    ("http/app.py", "app.state.http"): "Starlette: `app.state`, as above",
    ("testing/_app.py", "app.state.fake"): "Starlette: `app.state`, as above (the fake model server)",
    ("testing/fake_model.py", "self._server.should_exit"): "uvicorn: `Server.should_exit` is how a "
    "server run in a thread is told to stop",
    ("observability/logs.py", "record.msg"): "logging: a `Filter` may modify the `LogRecord` it passes "
    "(the record is the stdlib's, made per call)",
    ("observability/logs.py", "record.args"): "logging: as above",
    ("observability/logs.py", "record.exc_text"): "logging: a `Formatter` caches the traceback's text "
    "on the record (`Formatter.format` does so itself)",
    ("store/db/_engine.py", "dbapi_conn.isolation_level"): "SQLAlchemy: a `connect` event sets up the "
    "DBAPI connection (pysqlite's transaction handling, SQLAlchemy's documented recipe)",
    ("store/db/_engine.py", "dbapi_connection.autocommit"): "SQLAlchemy's asyncpg adapter: its "
    "`autocommit` switch is the DBAPI connection's own setting",
    ("store/db/_engine.py", "setattr(dialect)"): "SQLAlchemy's asyncpg dialect: the json/jsonb codec "
    "set-up methods are the ones it documents to override",
    ("store/db/_engine.py", "dialect.do_ping"): "SQLAlchemy: the pool's pre-ping calls the dialect's "
    "`do_ping`, the method a dialect overrides to ping differently",
    ("runtime/apps/apps.py", "sys.path.insert"): "Python's import system: `--app MODULE:ATTR` imports from "
    "the working directory, as `python -m` and uvicorn do, by putting it on `sys.path`",
    ("runtime/apps/run_options.py", "context.options"): "agent-framework: a chat middleware changes "
    "the call's options on its `ChatContext`",
    ("runtime/apps/run_options.py", "context.result"): "agent-framework: a middleware answers a call "
    "by setting `context.result`",
    ("runtime/journal/middleware.py", "context.result"): "agent-framework: as above (a replayed call)",
    ("runtime/journal/middleware.py", "context.stream_transform_hooks.append"): "agent-framework: a "
    "chat middleware sees a streamed reply through the context's stream hooks",
    ("runtime/journal/middleware.py", "context.stream_result_hooks.append"): "agent-framework: as above",
    ("runtime/journal/install.py", "client.chat_middleware"): "agent-framework: a chat client's "
    "public middleware lists are where middleware is installed on an app's own agents",
    ("runtime/journal/install.py", "client.function_middleware"): "agent-framework: as above",
    ("runtime/journal/install.py", "agent.middleware"): "agent-framework: an agent's public `middleware` "
    "list, for an agent without such a client",
    ("runtime/run/streamed_result.py", "agent.middleware"): "agent-framework: an agent's public "
    "`middleware` list, where the host puts the middleware that streams a middleware's own reply",
    ("runtime/run/streamed_result.py", "context.result"): "agent-framework: a middleware answers by "
    "setting `context.result` (a whole reply, handed over as a stream)",
    ("runtime/journal/run.py", "tool.additional_properties"): "agent-framework: a tool's "
    "`additional_properties` carry a caller's own marks (`not_safe_to_rerun`)",
}


def patches(name: str, source: str) -> list[tuple[str, int, str]]:
    """(module, line, what) wherever `source` sets an attribute of an object other than
    `self` (`x.a = ...`, also `self.x.a = ...`), grows a list or set another object holds
    (`run.hooks.append(...)`), or calls `setattr` on one (named `setattr(x)`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign | ast.AnnAssign)
            else []
        )
        for target in [t for tt in targets for t in (tt.elts if isinstance(tt, ast.Tuple) else [tt])]:
            if isinstance(target, ast.Attribute) and not (
                isinstance(target.value, ast.Name) and target.value.id == "self"
            ):
                found.append((name, node.lineno, ast.unparse(target)))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in MUTATORS
            and isinstance(func.value, ast.Attribute)
            and not (isinstance(func.value.value, ast.Name) and func.value.value.id == "self")
        ):
            found.append((name, node.lineno, ast.unparse(func)))
        if (
            isinstance(func, ast.Name)
            and func.id in ("setattr", "object.__setattr__")
            and node.args
            and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "self")
        ):
            found.append((name, node.lineno, f"setattr({ast.unparse(node.args[0])})"))
    return found


def _server_patches() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(SERVER.rglob("*.py")):
        name = path.relative_to(SERVER).as_posix()
        found += patches(name, path.read_text(encoding="utf-8"))
    return found


def test_nothing_in_server_is_patched_after_construction() -> None:
    patched = [
        f"{name}:{line} {what}"
        for name, line, what in _server_patches()
        if (name, what) not in ALLOWED and not name.startswith(QUARANTINE)
    ]
    assert not patched, patched


def test_every_allowed_patch_is_still_there() -> None:
    """An entry of `ALLOWED` that no longer matches anything goes: the list names only what is."""
    seen = {(name, what) for name, _line, what in _server_patches()}
    assert not set(ALLOWED) - seen, sorted(set(ALLOWED) - seen)


def test_the_patch_finder_finds_patches() -> None:
    """The check can fail: each shape it forbids is found, and `self`'s own attributes are not."""
    source = "def f(self, run, sink):\n    sink.usage_source = 1\n    self._pairing.session = 2\n"
    source += "    run.on_finished.append(3)\n    a.b, self.c = 4, 5\n    self.d = 6\n"
    source += "    report.responses += 1\n    self.stats.failed_writes += 2\n    setattr(sink, 'x', 7)\n"
    source += "    self.items.append(8)\n    local.append(9)\n"
    assert [what for _name, _line, what in patches("probe.py", source)] == [
        "sink.usage_source",
        "self._pairing.session",
        "a.b",
        "report.responses",
        "self.stats.failed_writes",
        "run.on_finished.append",
        "setattr(sink)",
    ]
