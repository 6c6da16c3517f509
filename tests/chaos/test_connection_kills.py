"""`pg_terminate_backend` of every server connection, eight times, under a stream of creations.

Eight clients create background countdowns on one replica as fast as they are answered (half
with an `Idempotency-Key`, half without), while the scenario ends every connection the replica
has to its database eight times. A connection ended under a statement surfaces in asyncpg as
errors that name no SQLSTATE (`InternalClientError: cannot switch to state ...; another
operation is in progress`, `ConnectionDoesNotExistError`): each must be the database's
unavailability (503 + `Retry-After`), never a 500, and a creation the database committed must be
answered with its response, never with an error a keyless client would retry into a duplicate.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import httpx
import pytest

from tests.support.pgserver import OwnPostgres

from .checks import Scenario, wait_terminal
from .conftest import Replicas
from .flow import Logs
from .harness import AUTH, DbWatch, countdown_input

pytestmark = pytest.mark.chaos

ROUNDS = 8
CLIENTS = 16
PAUSE = 0.4  # between two rounds of kills


@dataclass(eq=False)
class Creator(threading.Thread):
    """Creates background countdowns one after another until told to stop; a keyed client
    retries a 503 with the same key and body until it is answered."""

    base_url: str
    name_: str
    keyed: bool
    stop: threading.Event
    statuses: Counter[int] = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)
    answered: dict[str, str] = field(default_factory=dict)  # tag -> response id
    keys: dict[str, str] = field(default_factory=dict)  # tag -> key

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, name=self.name_, daemon=True)

    def run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30, headers=AUTH) as http:
            i = 0
            while not self.stop.is_set():
                i += 1
                tag = f"{self.name_}x{i}"
                key = f"key-{tag}" if self.keyed else None
                body = {"model": "countdown", "input": countdown_input(2, 0.05, tag), "background": True}
                for _attempt in range(20):
                    headers = {"idempotency-key": key} if key else {}
                    try:
                        r = http.post("/responses", json=body, headers=headers)
                    except httpx.HTTPError as exc:
                        self.bad.append(f"{tag}: no answer ({type(exc).__name__})")
                        break
                    self.statuses[r.status_code] += 1
                    if r.status_code == 200:
                        got = r.json()
                        if got.get("object") != "response" or not got.get("id"):
                            self.bad.append(f"{tag}: 200 without a response: {r.text[:200]}")
                        else:
                            self.answered[tag] = got["id"]
                            if key:
                                self.keys[tag] = key
                        break
                    if r.status_code == 503 and r.headers.get("retry-after"):
                        if not key:
                            break  # a keyless client gives up: it must not have been created twice
                        time.sleep(0.1)
                        continue
                    self.bad.append(f"{tag}: {r.status_code} {r.headers.get('retry-after')} {r.text[:300]}")
                    break


def test_terminate_backends_under_creations(
    chaos_pg: OwnPostgres, pg_db: str, pg_watch: DbWatch, replicas: Replicas
) -> None:
    """Proves: no 500 (every error a 503 with `Retry-After`), no key created twice, every 200
    is a response that exists, no traceback in the server's log, and every created response
    completes."""
    sc = Scenario("pg_terminate_backend x8 under creations")
    (a,) = replicas.start(chaos_pg.url(pg_db), 1)
    logs = Logs([a])
    stop = threading.Event()
    run = uuid.uuid4().hex[:6]
    creators = [Creator(a.base_url, f"c{i}r{run}", i % 2 == 0, stop) for i in range(CLIENTS)]
    for c in creators:
        c.start()
    time.sleep(0.5)
    killed = 0
    for _ in range(ROUNDS):
        rows = chaos_pg.psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            f"WHERE datname = '{pg_db}' AND pid <> pg_backend_pid()"
        )
        killed += int(rows.strip() or 0)
        time.sleep(PAUSE)
    time.sleep(0.5)
    stop.set()
    for c in creators:
        c.join(60)
    statuses: Counter[int] = Counter()
    for c in creators:
        statuses.update(c.statuses)
    sc.metric("connections ended", killed)
    sc.metric("create statuses", dict(sorted(statuses.items())))
    bad = [b for c in creators for b in c.bad]
    sc.expect(
        not bad, f"{len(bad)} creation(s) answered with something else than a response or a 503", str(bad[:5])
    )
    sc.expect(statuses[500] == 0, f"{statuses[500]} creation(s) answered 500")
    if statuses[200] < CLIENTS * 2:
        raise RuntimeError(f"only {statuses[200]} creations answered: the scenario tested nothing")
    # One response per key; every answered id exists.
    answered = {tag: rid for c in creators for tag, rid in c.answered.items()}
    stored = pg_watch.query("SELECT id, request FROM responses")
    per_tag: Counter[str] = Counter()
    for _rid, request in stored:
        for c in creators:
            if c.keyed and f"{c.name_}x" in request:
                tag = request.split(f"{c.name_}x", 1)[1].split('"', 1)[0].split()[0]
                per_tag[f"{c.name_}x{tag}"] += 1
    twice = {t: n for t, n in per_tag.items() if n > 1}
    sc.metric("keys created twice", len(twice))
    sc.expect(not twice, f"{len(twice)} Idempotency-Key(s) created two responses", str(list(twice)[:3]))
    ids = {rid for rid, _ in stored}
    missing = [rid for rid in answered.values() if rid not in ids]
    sc.expect(not missing, f"{len(missing)} answered response(s) not stored", str(missing[:3]))
    # Every response completes (the replica resumes what a cut connection stopped).
    finals = wait_terminal(sc, pg_watch, [a.base_url], sorted(answered.values()), timeout=30)
    unfinished = [
        (rid, body.get("status")) for rid, body in finals.items() if body.get("status") != "completed"
    ]
    sc.expect(not unfinished, f"{len(unfinished)} response(s) did not complete", str(unfinished[:3]))
    scans = logs.scans()
    tracebacks = [line for s in scans for line in s.grep(r"Traceback|Exception in ASGI|never retrieved")]
    sc.expect(not tracebacks, f"{len(tracebacks)} traceback(s) in the server's log", str(tracebacks[:3]))
    sc.metric("server log excerpt", [r for s in scans for r in s.top_records(4)])
    sc.finish()
