"""`serve --workers N`: N server processes on one port, under a small supervisor.

Job: on PostgreSQL, start N copies of `durable-responses serve` (the same command line, with
`--workers 1 --reuse-port`), each binding the same address with SO_REUSEPORT, so the kernel
spreads new connections over them. Each worker is a full replica: its own replica id, leases,
recovery sweep and LISTEN connection, exactly as N replicas on N machines would be; nothing is
shared between them but the database and the port. The supervisor only forwards signals and
watches its children.

Invariants:
- SIGTERM or SIGINT to the supervisor reaches every worker once (the workers run in their own
  process group, so a terminal's Ctrl-C is not delivered twice, which uvicorn would take for a
  forced exit), each drains as a single `serve` does, and when every worker drained cleanly the
  supervisor ends as a single `serve` does (by SIGTERM, which uvicorn raises again once its
  shutdown is done; with 0 after Ctrl+C); a worker that ended otherwise while draining makes it
  exit 1.
- A worker that dies unexpectedly (a crash, `kill -9`, the OOM killer) is replaced by a new one
  on the same port, as uvicorn and gunicorn replace theirs; the port never stops answering
  meanwhile (the other workers listen on it), and the dead worker's in-flight responses are
  taken over at once by its siblings (on PostgreSQL each worker holds a liveness lock that dies
  with it: `store/db/_pg_liveness.py`), not when their leases expire.
- A crash loop is not hidden: a worker that exits with 2 (it cannot serve this configuration:
  the app fails to load, the database is refused) is not replaced, nor is any worker once
  `MAX_REPLACEMENTS` were made within `REPLACEMENT_WINDOW` seconds; then the supervisor drains
  the others and exits non-zero (the dead worker's code, or 1), for whatever runs it to see.
  Replacements back off (`_backoff`) when they come close together.
- The supervisor holds the port (bound with SO_REUSEPORT, never listening) for its lifetime:
  port 0 resolves to one port for all workers, and an address taken by another program fails
  at once with one clear message instead of N.
- SQLite is refused for N > 1 (`check`): its database is one file with one writer on this
  machine, and the embedded default is one process.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType

__all__ = ["bind_reuse_port", "refusal", "supervise"]

log = logging.getLogger("durable_responses.workers")

_PR_SET_PDEATHSIG = 1
# Crash-loop limit: at most this many replacements of dead workers within the window (seconds).
MAX_REPLACEMENTS = 5
REPLACEMENT_WINDOW = 60.0
# A worker's exit code that says it cannot serve this configuration (cli: a start-up error).
CANNOT_SERVE = 2


def refusal(workers: int, backend: str) -> str | None:
    """Why `workers` processes cannot serve this database, or None when they can."""
    if workers > 1 and backend == "sqlite":
        return (
            f"--workers {workers} (DURABLE_RESPONSES_WORKERS) needs PostgreSQL: the SQLite default is "
            "embedded, one process with one writer on one file, so it is served by one worker. "
            "Run without --workers, or set DATABASE_URL to a PostgreSQL database "
            "(`durable-responses migrate` first)."
        )
    return None


def bind_reuse_port(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host:port` with SO_REUSEPORT (not yet listening)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the supervisor dies (even by `kill -9`), so no
    worker outlives it holding leases and the port."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class _Supervisor:
    def __init__(self, argv: Sequence[str], workers: int) -> None:
        self.argv = list(argv)
        self.workers = workers
        self.children: list[subprocess.Popen[bytes]] = []
        self.stopping = False
        self.signal: int | None = None  # the first signal received (or sent on a failure)
        self.replaced: list[float] = []  # when each replacement was made (monotonic)

    def _spawn(self) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "durable_responses", *self.argv]
        return subprocess.Popen(cmd, process_group=0, preexec_fn=_die_with_parent)

    def start(self) -> None:
        for _ in range(self.workers):
            self.children.append(self._spawn())
        log.info(
            "supervisor %d: %d workers (pids %s), one replica each",
            os.getpid(),
            self.workers,
            ", ".join(str(c.pid) for c in self.children),
        )

    def forward(self, sig: int, _frame: FrameType | None = None) -> None:
        if self.signal is None:
            self.signal = sig
        self.stopping = True
        for child in self.children:
            if child.poll() is None:
                try:
                    child.send_signal(sig)
                except ProcessLookupError:
                    pass

    def _replace(self, dead: subprocess.Popen[bytes]) -> bool:
        """Start a worker in place of `dead`; False when the crash-loop limit forbids it."""
        code = dead.returncode
        now = time.monotonic()
        self.replaced = [t for t in self.replaced if now - t < REPLACEMENT_WINDOW]
        if code == CANNOT_SERVE or len(self.replaced) >= MAX_REPLACEMENTS:
            return False
        time.sleep(_backoff(len(self.replaced)))
        if self.stopping:
            return True  # a signal came meanwhile: nothing to replace
        self.replaced.append(time.monotonic())
        new = self._spawn()
        self.children[self.children.index(dead)] = new
        log.error(
            "worker %d exited unexpectedly (code %s): replaced by worker %d (%d replacement(s) in the "
            "last %.0f s; at %d the supervisor stops)",
            dead.pid,
            code,
            new.pid,
            len(self.replaced),
            REPLACEMENT_WINDOW,
            MAX_REPLACEMENTS + 1,
        )
        return True

    def wait(self) -> int:
        failed: int | None = None
        while True:
            alive = [c for c in self.children if c.poll() is None]
            if failed is None and not self.stopping:
                for dead in [c for c in self.children if c.returncode is not None]:
                    if self._replace(dead):
                        continue
                    code = dead.returncode
                    failed = code if code not in (None, 0) else 1
                    why = (
                        "it cannot serve this configuration"
                        if code == CANNOT_SERVE
                        else f"{MAX_REPLACEMENTS} replacements in {REPLACEMENT_WINDOW:.0f} s: a crash loop"
                    )
                    log.error(
                        "worker %d exited unexpectedly (code %s) and is not replaced (%s): draining the "
                        "others and exiting %d",
                        dead.pid,
                        code,
                        why,
                        failed,
                    )
                    self.forward(signal.SIGTERM)
                    break
                alive = [c for c in self.children if c.poll() is None]
            if not alive:
                break
            time.sleep(0.1)
        if failed is not None:
            return failed
        # A worker drained by the forwarded signal ends by it (uvicorn raises it again once its
        # shutdown is done, as a single `serve` does): that is a clean exit too.
        clean = (0, -self.signal) if self.signal is not None else (0,)
        bad = [c for c in self.children if c.returncode not in clean]
        for c in bad:
            log.error("worker %d exited with %s while draining", c.pid, c.returncode)
        return 1 if bad else 0


def _backoff(recent: int) -> float:
    """Seconds before a replacement, after `recent` replacements within the window: none for
    the first, then 0.5 s doubling up to 8 s."""
    return 0.0 if recent == 0 else min(0.5 * 2 ** (recent - 1), 8.0)


def supervise(argv: Sequence[str], workers: int) -> int:
    """Run `workers` copies of `serve argv` and return the exit code the supervisor should have."""
    sup = _Supervisor(argv, workers)
    previous = {s: signal.signal(s, sup.forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        sup.start()
        code = sup.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if code == 0 and sup.signal not in (None, signal.SIGINT):
        # End as a single `serve` ends after a graceful drain: by the signal it was sent (a
        # SIGINT, Ctrl+C, is a stop the user asked for: exit 0, no KeyboardInterrupt).
        signal.raise_signal(sup.signal)
    return code
