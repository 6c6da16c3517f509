"""What a chaos scenario drives and watches: streaming clients, probes, the database, the logs.

- `StreamClient`: one user of one background+stream response, in a thread. It creates the
  response (optionally with an `Idempotency-Key`, retrying the POST on another replica when the
  first one never answered), reads the SSE stream, and on any end short of the terminal event
  reconnects with `Last-Event-ID`, honouring `Retry-After`. It records every event (with its
  arrival time) and every attempt (status, headers, how the stream ended).
- `Prober`: while a fault lasts, other users: `POST /responses`, `GET /responses/{id}` and
  `GET /readiness` on every live replica a few times a second, recording what they answered.
- `DbWatch`: reads the database directly (never through the proxy, never through a server)
  to see when events commit: the disruption times are measured on commits, not on a client's
  backoff.
- `LogScan`: the server's output (stdout and stderr, one file per process) scanned for
  tracebacks, "Exception in ASGI application" and "Task exception was never retrieved".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.support.sse import TERMINAL_EVENT_TYPES, iter_frames

T = TypeVar("T")

AUTH = {"authorization": "Bearer test-key"}
OK_ERROR_STATUSES = (503, 429)


def countdown_input(n: int, delay: float, tag: str = "") -> str:
    """Countdown app input: `n` ticks, `delay` s each; `tag` (no leading digits) marks the request."""
    return f"{n} delay={delay}" + (f" {tag}" if tag else "")


def ticks(n: int) -> list[str]:
    return [f"tick {i}" for i in range(n, -1, -1)]


# region clients ---------------------------------------------------------------------------------


@dataclass
class Attempt:
    """One HTTP exchange of a client: what it asked, what it got, how it ended."""

    t: float
    base_url: str
    kind: str  # "create" | "resume" | "post" | "get" | "readiness"
    status: int | None = None
    retry_after: str | None = None
    should_retry: str | None = None
    error_code: str | None = None
    end: str = ""  # "terminal" | "eof" | "error: <exception>" | "http" | "timeout"
    ended_at: float = 0.0
    events: int = 0

    def describe(self) -> str:
        bits = [f"{self.kind} {self.base_url.rsplit(':', 1)[-1]}", f"status={self.status}"]
        if self.status not in (None, 200):
            bits.append(f"retry-after={self.retry_after} x-should-retry={self.should_retry}")
            if self.error_code:
                bits.append(f"code={self.error_code}")
        bits.append(f"end={self.end}")
        return " ".join(bits)


def _record_headers(att: Attempt, r: httpx.Response) -> None:
    att.status = r.status_code
    att.retry_after = r.headers.get("retry-after")
    att.should_retry = r.headers.get("x-should-retry")


def _error_code(body: bytes) -> str | None:
    try:
        err = json.loads(body).get("error") or {}
        return str(err.get("code") or err.get("type"))
    except (ValueError, AttributeError):
        return None


def _retry_delay(att: Attempt, default: float = 0.2, cap: float = 1.0) -> float:
    """A client honours `Retry-After` (seconds), capped so the suite stays within its budget."""
    try:
        return min(cap, max(0.05, float(att.retry_after))) if att.retry_after else default
    except ValueError:
        return default


class StreamClient(threading.Thread):
    """One background+stream response, created and followed to its terminal event."""

    def __init__(
        self,
        label: str,
        targets: Callable[[], Sequence[str]],
        *,
        n: int,
        delay: float,
        idempotency_key: str | None = None,
        deadline: float,
        read_timeout: float = 10.0,
        follow: Callable[[], Sequence[str]] | None = None,
        stream_create: bool = True,
        start_after: float = 0.0,
    ) -> None:
        """`targets`: the replicas to create on (rotated); `follow`: those to resume the stream
        on (default: `targets`). With `stream_create=False` the POST answers JSON and the client
        streams from `follow` from the start. `start_after`: seconds to wait before the POST."""
        super().__init__(name=f"client-{label}", daemon=True)
        self.label = label
        self.targets = targets
        self.follow = follow or targets
        self.n = n
        self.tag = f"chaos-{label}"
        self.body = {
            "model": "countdown",
            "input": countdown_input(n, delay, self.tag),
            "background": True,
            "stream": stream_create,
        }
        self.idempotency_key = idempotency_key
        self.start_after = start_after
        self.deadline = deadline
        self.read_timeout = read_timeout
        self.response_id: str | None = None
        self.events: dict[int, tuple[float, dict[str, Any]]] = {}
        self.duplicates: list[int] = []  # seqs a resumed stream sent again (Last-Event-ID ignored)
        self.attempts: list[Attempt] = []
        self.created_ids: list[str] = []  # every response id a create answered with
        self.terminal = False
        self.failure: str | None = None
        self._turn = 0
        self._failures = 0  # consecutive attempts without an answer (for the backoff)

    # The client rotates over the live replicas: a load balancer in front of them.
    def _next_target(self, kind: str) -> str | None:
        targets = list((self.targets if kind == "create" else self.follow)())
        if not targets:
            return None
        self._turn += 1
        return targets[self._turn % len(targets)]

    def run(self) -> None:
        # One client (one connection pool, one TLS context) for the thread's life: a fresh
        # httpx client per attempt costs ~15 ms of CPU, and reconnect loops would starve the
        # very servers they wait for.
        timeout = httpx.Timeout(5.0, read=self.read_timeout)
        try:
            with httpx.Client(timeout=timeout, headers=AUTH) as http:
                time.sleep(self.start_after)
                while not self.terminal and time.monotonic() < self.deadline:
                    self._attempt(http, "create" if self.response_id is None else "resume")
        except Exception as exc:  # a bug in the harness: surfaced by the checks, never swallowed
            self.failure = f"{type(exc).__name__}: {exc}"

    def last_seq(self) -> int:
        return max(self.events) if self.events else -1

    def _attempt(self, http: httpx.Client, kind: str) -> None:
        base = self._next_target(kind)
        if base is None:  # every replica is down (a restart): wait for one
            time.sleep(0.05)
            return
        att = Attempt(time.monotonic(), base, kind)
        self.attempts.append(att)
        headers: dict[str, str] = {}
        if kind == "create":
            if self.idempotency_key:
                headers["idempotency-key"] = self.idempotency_key
            request: dict[str, Any] = {"method": "POST", "url": f"{base}/responses", "json": self.body}
        else:
            if self.events:
                headers["last-event-id"] = str(self.last_seq())
            request = {
                "method": "GET",
                "url": f"{base}/responses/{self.response_id}",
                "params": {"stream": "true"},
            }
        try:
            with http.stream(**request, headers=headers) as r:
                _record_headers(att, r)
                if r.status_code != 200:
                    att.error_code = _error_code(r.read())
                    att.end = "http"
                elif kind == "create" and not self.body["stream"]:
                    rid = json.loads(r.read())["id"]
                    self.created_ids.append(rid)
                    self.response_id = self.response_id or rid
                    att.end = "json"
                else:
                    self._read(r, att)
                    if not att.end:
                        att.end = "eof"
        except httpx.ReadTimeout:
            att.end = "timeout"
        except httpx.HTTPError as exc:
            att.end = f"error: {type(exc).__name__}: {exc}"
        att.ended_at = time.monotonic()
        if self.terminal:
            return
        if att.end == "http":
            time.sleep(_retry_delay(att))
        elif att.end.startswith("error") or att.end == "timeout" or (att.end == "eof" and not att.events):
            # No answer, or an empty stream: back off (0.1 s, growing to 0.5 s) like an SDK.
            self._failures += 1
            time.sleep(min(0.5, 0.1 * 1.5 ** (self._failures - 1)))
            return
        self._failures = 0

    def _read(self, r: httpx.Response, att: Attempt) -> None:
        for f in iter_frames(r.iter_lines()):
            if f.json is None:
                continue
            now = time.monotonic()
            e = f.json
            seq = int(e["sequence_number"])
            if seq == 0 and e["type"] == "response.created":
                rid = e["response"]["id"]
                self.created_ids.append(rid)
                if self.response_id is None:
                    self.response_id = rid
            if seq in self.events:
                self.duplicates.append(seq)
            else:
                self.events[seq] = (now, e)
            att.events += 1
            if e["type"] in TERMINAL_EVENT_TYPES:
                self.terminal = True
                att.end = "terminal"
                return


def start_clients(clients: Sequence[StreamClient], *, created_within: float = 20.0) -> None:
    """Start every client and wait until each knows its response id (its create answered)."""
    for c in clients:
        c.start()
    deadline = time.monotonic() + created_within
    for c in clients:
        while c.response_id is None:
            if c.failure or not c.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(
                    f"client {c.label} got no response.created: {c.failure} "
                    f"{[a.describe() for a in c.attempts]}"
                )
            time.sleep(0.02)


# endregion

# region probes ----------------------------------------------------------------------------------


class Prober(threading.Thread):
    """Other users during a fault: create, read and ask for readiness on every live replica."""

    def __init__(self, targets: Callable[[], Sequence[str]], known_id: str, *, interval: float = 0.3) -> None:
        super().__init__(name="prober", daemon=True)
        self.targets = targets
        self.known_id = known_id
        self.interval = interval
        self.results: list[Attempt] = []
        self.created: list[str] = []  # responses a probe POST created (checked like the load)
        self._halt = threading.Event()
        self.failure: str | None = None

    def stop(self) -> None:
        self._halt.set()
        self.join(15)

    def run(self) -> None:
        try:
            with httpx.Client(timeout=httpx.Timeout(5.0), headers=AUTH) as http:
                while not self._halt.is_set():
                    for base in list(self.targets()):
                        self._probe(http, base)
                    self._halt.wait(self.interval)
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"

    def _probe(self, http: httpx.Client, base: str) -> None:
        body = {"model": "countdown", "input": countdown_input(1, 0.0, "probe"), "background": True}
        calls: list[tuple[str, Callable[[], httpx.Response]]] = [
            ("post", lambda: http.post(f"{base}/responses", json=body)),
            ("get", lambda: http.get(f"{base}/responses/{self.known_id}")),
            ("readiness", lambda: http.get(f"{base}/readiness")),
        ]
        for kind, call in calls:
            att = Attempt(time.monotonic(), base, kind)
            try:
                r = call()
                _record_headers(att, r)
                att.end = "http"
                if r.status_code != 200:
                    att.error_code = _error_code(r.content)
                elif kind == "post":
                    self.created.append(r.json()["id"])
            except httpx.TimeoutException:
                att.end = "timeout"
            except httpx.HTTPError as exc:
                att.end = f"error: {type(exc).__name__}"
            att.ended_at = time.monotonic()
            self.results.append(att)


# endregion

# region database --------------------------------------------------------------------------------


class DbWatch:
    """Direct reads of the outbox (PostgreSQL through asyncpg in its own thread, or SQLite)."""

    def __init__(self, *, pg_dsn: str | None = None, sqlite_path: Path | None = None) -> None:
        assert (pg_dsn is None) != (sqlite_path is None)
        self.pg_dsn = pg_dsn
        self.sqlite_path = sqlite_path
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        if pg_dsn is not None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="dbwatch", daemon=True)
            self._thread.start()

    def close(self) -> None:
        if self._loop is not None and self._thread is not None:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._run(self._conn.close(timeout=2))
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(15)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Rows of `sql` (`$1`-style parameters; a list parameter is an array / an IN list)."""
        if self.sqlite_path is not None:
            return self._sqlite(sql, args)
        return self._run(self._pg(sql, args))

    async def _pg(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        import asyncpg  # type: ignore[import-untyped]

        if self._conn is None or self._conn.is_closed():
            self._conn = await asyncpg.connect(self.pg_dsn, timeout=5)
        try:
            return [tuple(r) for r in await self._conn.fetch(sql, *args, timeout=10)]
        except Exception:
            with contextlib.suppress(Exception):
                self._conn.terminate()
            self._conn = None
            raise

    def _sqlite(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        flat: list[Any] = []

        def expand(m: re.Match[str]) -> str:
            value = args[int(m.group(1)) - 1]
            if isinstance(value, list | tuple):
                flat.extend(value)
                return "(" + ",".join("?" * len(value)) + ")"
            flat.append(value)
            return "?"

        text = re.sub(r"\$(\d+)", expand, sql.replace("= ANY($1)", "IN $1"))
        con = sqlite3.connect(f"file:{self.sqlite_path}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(text, flat).fetchall()
        finally:
            con.close()

    def try_query(self, sql: str, *args: Any) -> list[tuple[Any, ...]] | None:
        try:
            return self.query(sql, *args)
        except Exception:
            return None

    def max_seqs(self, ids: Sequence[str]) -> dict[str, int]:
        rows = self.query(
            "SELECT response_id, max(seq) FROM events WHERE response_id = ANY($1) GROUP BY response_id",
            list(ids),
        )
        return {r[0]: int(r[1]) for r in rows}

    def responses(self, ids: Sequence[str]) -> dict[str, tuple[str, str | None, float | None]]:
        """id -> (status, lease_owner, lease_expires_at)."""
        rows = self.query(
            "SELECT id, status, lease_owner, lease_expires_at FROM responses WHERE id = ANY($1)", list(ids)
        )
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def active(self, ids: Sequence[str]) -> list[str]:
        return [
            rid
            for rid, (status, _o, _e) in self.responses(ids).items()
            if status in ("queued", "in_progress")
        ]

    def wait_progress(
        self, baseline: dict[str, int], *, since: float, timeout: float, until_all: bool = True
    ) -> dict[str, float]:
        """Seconds after `since` at which each response of `baseline` committed an event after
        its baseline sequence (polled every 20 ms; read errors while the database is away are
        retried). Responses that never did are missing from the result."""
        seen: dict[str, float] = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now_seqs = None
            with contextlib.suppress(Exception):
                now_seqs = self.max_seqs(list(baseline))
            now = time.monotonic()
            if now_seqs is not None:
                for rid, seq in now_seqs.items():
                    if rid not in seen and seq > baseline[rid]:
                        seen[rid] = now - since
                if len(seen) == len(baseline) or (seen and not until_all):
                    break
            time.sleep(0.02)
        return seen

    def wait_for(self, what: str, cond: Callable[[], bool], timeout: float) -> float:
        """Poll `cond` until true; returns the monotonic time. Raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):
                if cond():
                    return time.monotonic()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout}s")
            time.sleep(0.02)


# endregion

# region logs ------------------------------------------------------------------------------------

BAD_LOG_MARKERS = {
    "traceback": "Traceback (most recent call last)",
    "exception in ASGI application": "Exception in ASGI application",
    "task exception was never retrieved": "Task exception was never retrieved",
}


# "2026-12-01 09:26:55,486 ERROR durable_responses.recovery: recovery sweep failed"
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ ([A-Z]+) ([\w.]+): (.*)$")
_FRAMEWORK_LINE = re.compile(r"^\S+ \S+ \w+ agent_framework[.\w]*: ")


@dataclass
class LogScan:
    """What one server process wrote from `offset` on."""

    path: Path
    lines: int = 0  # lines the host wrote (the app framework's own warnings left out)
    counts: dict[str, int] = field(default_factory=dict)
    excerpts: list[str] = field(default_factory=list)
    text: str = ""

    @classmethod
    def of(cls, path: Path, offset: int = 0, excerpt_lines: int = 6) -> LogScan:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                text = f.read().decode(errors="replace")
        except OSError:
            text = ""
        lines = text.splitlines()
        # The app's framework warns once per workflow built ("Self-loop detected"): not the host's.
        own = [ln for ln in lines if not _FRAMEWORK_LINE.search(ln)]
        scan = cls(path, lines=len(own), text=text)
        for name, marker in BAD_LOG_MARKERS.items():
            scan.counts[name] = text.count(marker)
        for i, line in enumerate(lines):
            if len(scan.excerpts) >= 3:
                break
            if any(m in line for m in BAD_LOG_MARKERS.values()):
                # The log record that carried it, and the last lines of the traceback that
                # follows (where the error is named).
                records = (ln for ln in reversed(lines[max(0, i - 200) : i + 1]) if _RECORD.match(ln))
                header = next((ln for ln in records if not _FRAMEWORK_LINE.search(ln)), line)
                tail = lines[i + 1 : i + 80]
                end = next((j for j, ln in enumerate(tail) if _RECORD.match(ln)), len(tail))
                body = [ln for ln in tail[:end] if ln.strip()]
                scan.excerpts.append("\n".join([header, *body[-excerpt_lines:]]))
        return scan

    def top_records(self, limit: int = 6) -> list[str]:
        """The most frequent log records of the host (level, logger, first words), with counts."""
        counts: Counter[str] = Counter()
        for ln in self.text.splitlines():
            m = _RECORD.match(ln)
            if m and not _FRAMEWORK_LINE.search(ln):
                counts[f"{m.group(1)} {m.group(2)}: {m.group(3)[:90]}"] += 1
        return [f"{n}x {rec}" for rec, n in counts.most_common(limit)]

    def bad(self) -> int:
        return sum(self.counts.values())

    def grep(self, pattern: str) -> list[str]:
        rx = re.compile(pattern, re.IGNORECASE)
        return [ln for ln in self.text.splitlines() if rx.search(ln)]


def log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# endregion
