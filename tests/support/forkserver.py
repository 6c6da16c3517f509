"""A fork server for subprocess test servers: one Python process per test process imports the
server's modules (and the libraries the test apps use) once, then forks a child per server.

Importing the server and the framework costs ~1.5-2 s of CPU per interpreter, ~0.8 s more for
the apps on agent-framework's OpenAI clients; a child forked from a process that already did
starts with all of it in memory (copy-on-write) and costs a few milliseconds. The child then
does what `python -m durable_responses serve ...` does from argument parsing on: it takes the
test's environment, working directory and command line and calls
`durable_responses.cli.main(argv)` (settings, app loading, migration, uvicorn, signal
handling), in a process of its own that `kill -9` ends like any other. The app module
(`--app`) is imported by `serve` itself, in the child. When `main` returns, the interpreter
exits as any other (atexit handlers run, the exit code is SystemExit's).

The children are the fork server's, not the test process's: the fork server reaps each and
sends its exit code over the connection that asked for it; `Forked` gives the test the part
of `subprocess.Popen` a `ServerProcess` uses (pid, poll, wait, send_signal, returncode).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent

# The fork server's program. The libraries are imported before the first fork; nothing else
# runs in it (no event loop, no thread), so a fork of it is a plain copy.
_PROGRAM = r"""
import gc, json, os, select, signal, socket, sys
import uvicorn, uvloop, httptools  # what `serve` imports on its way to listening
import agent_framework
import durable_responses.cli, durable_responses.service, durable_responses.http.app, durable_responses.runtime.host
import openai, agent_framework_openai, agent_framework_orchestrations  # the test apps' clients


def forks(path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    children = {}  # pidfd -> (pid, connection)
    gc.freeze()  # the imported objects stay out of the children's collections (no page copies)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        ready, _, _ = select.select([sys.stdin, listener, *children], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
            for pid, _conn in children.values():  # the test process is gone: so are its servers
                os.kill(pid, signal.SIGKILL)
            # and its socket's directory (the test process may have exited without its atexit)
            os.unlink(path)
            os.rmdir(os.path.dirname(path))
            sys.exit(0)
        if listener in ready:
            conn, _ = listener.accept()
            line = conn.makefile("rb").readline()
            if not line:
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                listener.close()
                for fd, (_pid, other) in children.items():
                    os.close(fd)
                    other.close()
                conn.close()
                return json.loads(line)
            children[os.pidfd_open(pid)] = (pid, conn)
            conn.sendall(b"%d\n" % pid)
        for fd in [fd for fd in ready if fd in children]:
            pid, conn = children.pop(fd)
            _, status = os.waitpid(pid, 0)
            os.close(fd)
            try:
                conn.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
            except OSError:
                pass
            conn.close()


cfg = forks(sys.argv[1])
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
log = os.open(cfg["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
os.dup2(log, 1)
os.dup2(log, 2)
os.close(log)
os.environ.clear()
os.environ.update(cfg["env"])
os.chdir(cfg["cwd"])
sys.argv = ["durable-responses", *cfg["argv"]]
durable_responses.cli.main(cfg["argv"])
"""


class Forked:
    """A child of the fork server, as much of a `subprocess.Popen` as `ServerProcess` uses.

    Thread-safe as Popen is: a test's load thread polls a server that the test's own thread
    kills and waits for; one thread at a time reads the fork server's answer."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._buffer = b""
        self._reading = threading.Lock()
        self.returncode: int | None = None
        pid = self._line(timeout=30)
        if pid is None:
            conn.close()
            raise OSError("the fork server did not fork")
        self.pid = pid

    def _line(self, timeout: float | None) -> int | None:
        """The next number the fork server sends; None when none came within `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._conn], [], [], left)[0]:
                return None
            chunk = self._conn.recv(64)
            if not chunk:
                raise OSError("the fork server went away")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return int(line)

    def poll(self) -> int | None:
        return self.wait(0) if self.returncode is None else self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            # Another thread reading the answer: wait for it (a poll does not).
            if self._reading.acquire(timeout=-1 if left is None else left):
                try:
                    if self.returncode is None:
                        code = self._line(left)
                        if code is not None:
                            self.returncode = code
                            self._conn.close()
                finally:
                    self._reading.release()
            if self.returncode is None and deadline is not None and time.monotonic() >= deadline:
                if timeout == 0:
                    return None
                raise subprocess.TimeoutExpired(f"server {self.pid}", timeout or 0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # not reaped yet: the pid is still this child's
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    def __init__(self, python: str) -> None:
        self._dir = tempfile.mkdtemp(prefix="dr-forks-")
        self.path = os.path.join(self._dir, "forks.sock")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [python, "-c", _PROGRAM, self.path],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline() != b"ready\n":
            raise OSError(f"the fork server exited with {self.proc.wait()}")

    def fork(self, config: dict[str, Any]) -> Forked:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            conn.sendall(json.dumps(config).encode() + b"\n")
            return Forked(conn)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # it kills its children and exits
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self._dir, ignore_errors=True)  # the fork server removes it as it exits


# One fork server per interpreter (another venv's python: another agent-framework release).
_servers: dict[str, ForkServer] = {}
_lock = threading.Lock()
ENABLED = False  # the test suite's conftest turns it on (`servers.keep_spares`)


def fork(config: dict[str, Any], python: str | None = None) -> Forked | None:
    """A forked server process running `config` (argv, env, cwd, log) under `python` (default:
    this interpreter), or None when the fork server is off or cannot be had (the caller starts
    the server the ordinary way)."""
    if not ENABLED:
        return None
    python = python or sys.executable
    with _lock:
        server = _servers.get(python)
        if server is not None and server.proc.poll() is not None:
            server = None  # it died: start another
        if server is None:
            try:
                server = _servers[python] = ForkServer(python)
            except OSError:
                _servers.pop(python, None)
                return None
    try:
        return server.fork(config)
    except OSError:
        return None


@atexit.register
def _close() -> None:
    with _lock:
        for server in _servers.values():
            server.close()
        _servers.clear()
