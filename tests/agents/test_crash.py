"""`kill -9` in the middle of every hosted orchestration and of the tool agent (issue 12), and tool
approvals pending across `kill -9` + a restart in a fresh working directory.

The apps run on agent-framework's real OpenAI clients against the fake model server (in this
process); the first server is a subprocess (`python -m durable_responses serve`) that a real SIGKILL ends.
The kill point is a condition, never a sleep: the first output delta committed (then the
checkpoint before that superstep is committed too: the outbox commits in order), or a chosen
agent's model call in flight with every earlier call covered by a committed checkpoint (read
from the database). The fake's per-token delay makes the interrupted call last; once killed, the
delay is dropped and a fresh server on the same database (in this process) recovers the response.

Each crash test proves: the response completes; its full replay passes `check_sequence`
(gap-free, one created, one terminal, terminal output = items done minus incomplete) and equals
what the client saw before the kill plus what it reads after (`starting_after`), payload for
payload; every output appears exactly once in the final output; and no agent reran beyond the
interrupted superstep: per agent, the model calls beyond an uninterrupted run's are at most that
agent's calls the first process made after its newest committed checkpoint, and at most one
superstep's worth in all. Dialects and clients alternate over the scenarios so that each is
covered; the first servers of the whole module start at once, in the background, to keep the
file fast.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_responses.testing import FakeCall, FakeModel, Usage
from tests.agents import apps
from tests.agents.hosted import approval_answer, check_event, fake, usage_of, wait_terminal
from tests.support.inprocess import InProcessServer
from tests.support.pg import drop_pg_database, new_pg_database
from tests.support.servers import ServerProcess
from tests.support.sse import check_sequence, iter_frames, stream_events

__all__ = ["fake"]  # fixture

pytestmark = pytest.mark.crash

SLOW = 0.05  # seconds per streamed token while the call to interrupt runs
QUESTION_TEXT = "write a haiku about tea"


def _said(agent: str, text: str = QUESTION_TEXT) -> str:
    return f'{agent}: You said "{text}"'


@dataclass(frozen=True)
class Crash:
    """One crash scenario: where it runs, where it is killed, what an uninterrupted run does."""

    app: str
    dialect: str
    api: str
    calls: dict[str, int]  # model calls per agent of an uninterrupted run
    texts: list[str]  # the final output's message texts
    superstep: int  # the most model calls one superstep of it makes (the rerun allowance)
    kill_in_flight: frozenset[str] = frozenset()  # kill while these agents' calls run (else: first delta)
    slow_from: str | None = None  # the agent whose first call turns the token delay on (None: at once)
    input: str = QUESTION_TEXT
    types: list[str] = field(default_factory=list)  # the final output's item types (default: messages)
    # Seconds per streamed token while the call to interrupt runs: the window in which every
    # agent of `kill_in_flight` must be mid-call at once.
    token_delay: float = SLOW


CRASHES = {
    "sequential": Crash(
        "sequential",
        "postgresql",
        "chat",
        {"writer": 1, "reviewer": 1},
        [_said("reviewer")],
        1,
        slow_from="reviewer",
    ),
    "concurrent": Crash(
        "concurrent",
        "sqlite",
        "responses",
        {"researcher": 1, "marketer": 1, "legal": 1},
        [_said("researcher"), _said("marketer"), _said("legal")],
        3,
        kill_in_flight=frozenset({"researcher", "marketer", "legal"}),
        # Three calls that start one after another must all still run when the third starts:
        # on a loaded machine the third starts up to ~1.5 s after the first.
        token_delay=0.4,
    ),
    "handoff": Crash(
        "handoff",
        "postgresql",
        "responses",
        {"triage": 1, "billing": 1},
        [_said("billing", "billing: when is my invoice due?")],
        1,
        slow_from="billing",
        input="billing: when is my invoice due?",
        types=["mcp_call", "message"],
    ),
    "group_chat": Crash(
        "group_chat",
        "sqlite",
        "chat",
        {"researcher": 1, "writer": 1},
        ["The group chat has reached the maximum number of rounds."],
        1,
        kill_in_flight=frozenset({"writer"}),
        slow_from="writer",
    ),
    "group_chat_manager": Crash(
        "group_chat_manager",
        "postgresql",
        "responses",
        {"moderator": 3, "researcher": 1, "writer": 1},
        ["Every participant has spoken; the conversation is complete."],
        1,
        kill_in_flight=frozenset({"writer"}),
        slow_from="writer",
    ),
    "magentic": Crash(
        "magentic",
        "sqlite",
        "chat",
        {"manager": 6, "researcher": 1, "writer": 1},
        [f"Final answer: the team has completed the task: {QUESTION_TEXT}"],
        3,  # the manager's first superstep: facts, plan, progress ledger
        kill_in_flight=frozenset({"writer"}),
        slow_from="writer",
    ),
    "usage-magentic": Crash(
        "magentic",
        "postgresql",
        "responses",
        {"manager": 6, "researcher": 1, "writer": 1},
        [f"Final answer: the team has completed the task: {QUESTION_TEXT}"],
        3,
        kill_in_flight=frozenset({"writer"}),
        slow_from="writer",
    ),
    "tool_agent": Crash(
        "tool_agent",
        "postgresql",
        "responses",
        {"assistant": 2},
        ["assistant: Tool lookup_order returned: order A1 shipped on 2026-11-30"],
        2,  # a plain agent has no checkpoints: its whole run is the unit a crash repeats
        input="lookup_order order_id=A1",
        # The tool ran (and was shown, completed) before the kill; the rerun replays the model's
        # call and the tool's result from the journal: the same call, shown once.
        types=["mcp_call", "message"],
    ),
}

# Approvals pending across kill -9 + a fresh working directory: app, dialect, client.
RESTARTS = {
    "approval_agent-postgresql": ("approval_agent", "postgresql", "chat"),
    "approval_agent-sqlite": ("approval_agent", "sqlite", "responses"),
    "handoff_refund-postgresql": ("handoff", "postgresql", "responses"),
}


# region the first servers, started together


@dataclass
class FirstLife:
    """A case's database and its first server (a subprocess), already started."""

    database_url: str
    server: ServerProcess
    tool_log: Path
    api: str


class FirstLives:
    def __init__(self, fake: FakeModel, tmp: Path, wanted: dict[str, tuple[str, str, str]]) -> None:
        self.lives: dict[str, FirstLife] = {}
        self._pg: list[str] = []
        for name, (app, dialect, api) in wanted.items():
            base = tmp / name
            base.mkdir(parents=True)
            if dialect == "sqlite":
                # Outside every server's working directory: a fresh one finds it only by its URL.
                url = f"sqlite:///{base / 'db' / 'durable-responses.db'}"
                (base / "db").mkdir()
            else:
                url = new_pg_database(migrated=True)
                self._pg.append(url)
            log = base / "tools.jsonl"
            env = {**fake.env(api), apps.TOOL_LOG_ENV: str(log)}
            srv = ServerProcess(
                database_url=url, app=f"tests.agents.apps:{app}", workdir=base / "compute-1", env=env
            )
            self.lives[name] = FirstLife(url, srv, log, api)
        with ThreadPoolExecutor(max_workers=max(1, len(self.lives))) as pool:
            list(pool.map(lambda life: life.server.start(timeout=120), self.lives.values()))

    def close(self) -> None:
        for life in self.lives.values():
            life.server.kill()
        with ThreadPoolExecutor(max_workers=max(1, len(self._pg))) as pool:
            list(pool.map(drop_pg_database, self._pg))


@pytest.fixture(scope="module")
def first_lives(
    request: pytest.FixtureRequest, fake: FakeModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FirstLives]:
    """The first server of every selected test of this module, started in parallel up front."""
    selected = {
        item.callspec.params["case"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec") and "case" in item.callspec.params
    }
    wanted = {n: (c.app, c.dialect, c.api) for n, c in CRASHES.items() if n in selected}
    wanted |= {n: spec for n, spec in RESTARTS.items() if n in selected}
    lives = FirstLives(fake, tmp_path_factory.mktemp("crash"), wanted)
    try:
        yield lives
    finally:
        lives.close()


# region observing the first life


class Checkpoints:
    """The committed checkpoints of a response, read from the database itself."""

    def __init__(self, database_url: str) -> None:
        self._url = database_url
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: Any = None

    def created(self, rid: str) -> list[float]:
        query = "SELECT created_at FROM checkpoints WHERE response_id = "
        if self._url.startswith("sqlite"):
            path = self._url.split("sqlite:///", 1)[1]
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
            try:
                return sorted(r[0] for r in con.execute(query + "?", (rid,)))
            finally:
                con.close()
        import asyncpg  # type: ignore[import-untyped]

        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            dsn = self._url.replace("postgresql://", "postgres://")
            self._conn = self._loop.run_until_complete(asyncpg.connect(dsn))
        rows = self._loop.run_until_complete(self._conn.fetch(query + "$1", rid))
        return sorted(float(r[0]) for r in rows)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.run_until_complete(self._conn.close())
            self._loop.close()


class LiveStream:
    """A background response created with `stream=true`, read in a thread until the server dies."""

    def __init__(self, base_url: str, body: dict[str, Any]) -> None:
        self.events: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._read, args=(base_url, body), daemon=True)
        self._thread.start()

    def _read(self, base_url: str, body: dict[str, Any]) -> None:
        try:
            with httpx.stream("POST", f"{base_url}/v1/responses", json=body, timeout=60) as r:
                for f in iter_frames(r.iter_lines()):
                    if f.json is not None:
                        self.events.append(f.json)
        except (httpx.HTTPError, ValueError):
            pass  # the server was killed mid-stream (a cut frame is not an event)

    @property
    def response_id(self) -> str | None:
        return self.events[0]["response"]["id"] if self.events else None

    def join(self) -> None:
        self._thread.join(30)
        assert not self._thread.is_alive()


def _wait(condition: Callable[[], bool], timeout: float, what: str, state: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {state()}")
        time.sleep(0.005)


@dataclass
class Killed:
    rid: str
    mark: int  # the fake's calls before the response
    before: list[dict[str, Any]]  # what the client saw before the kill
    first_life: list[FakeCall]  # the model calls the killed process made
    eligible: Counter[str]  # per agent, its calls after the newest committed checkpoint
    # The calls the fake had answered to their end when the kill came. A held call is released
    # after the kill: the fake may still write its last frame, and count it finished, before it
    # sees the dead client's disconnect (a loaded machine), though no process received it.
    finished_at_kill: frozenset[int]


@contextmanager
def start_times(fake: FakeModel, slow_from: str | None, delay: float = SLOW) -> Iterator[dict[int, float]]:
    """The wall-clock time each model call reached the fake (call index -> time), recorded by
    the fake's own `record` (wrapped for the duration): comparable with a checkpoint's
    `created_at`, which the server takes with the same clock. The first call of `slow_from`
    turns the per-token delay on before its reply streams (a reply of a few tokens streams in
    under a millisecond: a test polling for it would be too late)."""
    stamps: dict[int, float] = {}
    record = fake.state.record

    def stamped(**kwargs: Any) -> FakeCall:
        at = time.time()
        call = record(**kwargs)
        stamps[call.index] = at
        if call.agent == slow_from:
            fake.token_delay = delay
        return call

    fake.state.record = stamped  # type: ignore[method-assign]
    try:
        yield stamps
    finally:
        fake.state.record = record  # type: ignore[method-assign]


def run_and_kill(case: Crash, life: FirstLife, fake: FakeModel) -> Killed:
    """Start the case's response (background, streamed), wait for its kill point, kill -9."""
    mark = fake.mark()
    fake.token_delay = case.token_delay if case.slow_from is None else 0.0
    probe = Checkpoints(life.database_url)

    def calls() -> list[FakeCall]:
        return fake.calls_since(mark)

    # The calls to interrupt stop before their reply's last frame until the kill: killed a
    # moment after the fake had finished one, the server might have recorded it (replayed,
    # not repeated) or not (made again): a kill point in neither.
    fake.hold(case.kill_in_flight)
    try:
        with start_times(fake, case.slow_from, case.token_delay) as started:
            live = LiveStream(
                life.server.base_url,
                {"model": "fake-model", "input": case.input, "background": True, "stream": True},
            )

            def at_kill_point() -> bool:
                if live.response_id is None:
                    return False
                if not case.kill_in_flight:
                    return any(e["type"] == "response.output_text.delta" for e in live.events)
                now = calls()
                if not case.kill_in_flight <= {c.agent for c in now if not c.finished}:
                    return False
                created = probe.created(live.response_id)
                # Every call but the running ones started before the newest committed checkpoint
                # (its superstep is behind it): only the running ones can rerun.
                return bool(created) and all(started[c.index] < created[-1] for c in now if c.finished)

            def state() -> str:  # what the wait saw, should it time out
                cps = probe.created(live.response_id) if live.response_id else []
                shown = [(c.agent, c.finished, started.get(c.index)) for c in calls()]
                return f"calls {shown}, checkpoints {cps}, events {[e['type'] for e in live.events][-5:]}"

            try:
                _wait(at_kill_point, 60, f"{case.app}'s kill point", state)
                finished_at_kill = frozenset(c.index for c in calls() if c.finished)
                life.server.kill()
                fake.token_delay = 0.0
                live.join()
                rid = live.response_id
                assert rid is not None
                created = probe.created(rid)
            finally:
                fake.token_delay = 0.0
                probe.close()
            first_life = calls()
            newest = created[-1] if created else 0.0
            eligible = Counter(c.agent or "?" for c in first_life if started[c.index] >= newest)
    finally:
        fake.hold()
    before = live.events
    assert before and before[-1]["type"] not in ("response.completed", "response.failed"), before[-1:]
    return Killed(rid, mark, before, first_life, eligible, finished_at_kill)


# region crash tests


@dataclass
class Recovered:
    killed: Killed
    final: Any  # the openai Response once completed
    full: list[dict[str, Any]]  # its full replay


def kill_and_recover(
    case: str, first_lives: FirstLives, fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> Recovered:
    """Kill the case's first server mid-run; a new server on the same database finishes it."""
    crash, life = CRASHES[case], first_lives.lives[case]
    killed = run_and_kill(crash, life, fake)
    for key, value in {**fake.env(crash.api), apps.TOOL_LOG_ENV: str(life.tool_log)}.items():
        monkeypatch.setenv(key, value)
    with InProcessServer(life.database_url, app=f"tests.agents.apps:{crash.app}") as srv:
        client = srv.client()
        final = wait_terminal(client, killed.rid, timeout=60)
        assert final.status == "completed", (final.status, final.error)
        last = killed.before[-1]["sequence_number"]
        after = stream_events(srv.base_url, killed.rid, after=last)
        full = stream_events(srv.base_url, killed.rid)
    check_sequence(full, label=f"{case} replay")
    assert killed.before + after == full, "what the client saw before and after the kill is not the replay"
    return Recovered(killed, final, full)


@pytest.mark.parametrize("case", [c for c in CRASHES if not c.startswith("usage-")])
def test_kill_mid_run_completes_with_every_output_once(
    case: str, first_lives: FirstLives, fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 mid-run (background + stream), restart on the same database: the response
    completes, its replay is one consistent sequence equal to what the client saw before and
    after, every output is in the final output exactly once, and no agent reran beyond the
    interrupted superstep (see the module docstring)."""
    crash = CRASHES[case]
    got = kill_and_recover(case, first_lives, fake, monkeypatch)
    killed, final, full = got.killed, got.final, got.full
    for event in full:
        check_event(event)

    # Every output exactly once.
    output = [i.model_dump(mode="json", exclude_none=True) for i in final.output]
    assert [i["type"] for i in output] == (crash.types or ["message"] * len(crash.texts))
    texts = [p["text"] for i in output if i["type"] == "message" for p in i["content"]]
    assert texts == crash.texts
    assert len({i["id"] for i in output}) == len(output)
    assert final.model_dump(mode="json", exclude_unset=True)["output"] == full[-1]["response"]["output"]
    completed_before = {
        e["item"]["id"]
        for e in killed.before
        if e["type"] == "response.output_item.done" and e["item"]["status"] == "completed"
    }
    assert completed_before <= {i["id"] for i in output}, "an item completed before the kill was lost"

    # No agent reran beyond the interrupted superstep.
    total = Counter(c.agent or "?" for c in fake.calls_since(killed.mark))
    extra = total - Counter(crash.calls)
    assert Counter(crash.calls) - total == Counter(), f"calls missing: {total} vs {crash.calls}"
    for agent, n in extra.items():
        assert n <= killed.eligible[agent], (
            f"{agent} reran {n} call(s) but made only {killed.eligible[agent]} after the newest committed "
            f"checkpoint (first life {Counter(c.agent for c in killed.first_life)}, total {total})"
        )
    assert sum(extra.values()) <= crash.superstep, f"{extra} is more than one superstep ({crash.superstep})"


@pytest.mark.parametrize("case", ["usage-magentic"])
def test_recovered_usage_counts_the_calls_before_the_crash(
    case: str, first_lives: FirstLives, fake: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Usage is the sum over every model call of the response: after a crash, the calls the
    killed process finished (the fake reported their usage) count as well as the recovery's."""
    got = kill_and_recover(case, first_lives, fake, monkeypatch)
    first_life = {c.index for c in got.killed.first_life}
    billed = Usage()
    for call in fake.calls_since(got.killed.mark):
        finished = call.index in got.killed.finished_at_kill if call.index in first_life else call.finished
        if finished and call.usage is not None:
            billed = billed + call.usage
    assert usage_of(got.final) == billed


# region approvals across a restart in a fresh working directory


@pytest.mark.parametrize("case", list(RESTARTS))
def test_pending_approval_survives_kill_and_a_fresh_working_directory(
    case: str, first_lives: FirstLives, fake: FakeModel, tmp_path: Path
) -> None:
    """An approval pending when the server is killed (-9) is answered on a new server started in
    a fresh, empty working directory (only the database, PostgreSQL or a SQLite file outside
    both directories, is shared): approved, the tool runs exactly once, on the new server, and
    its result reaches the model; answering again is a 409."""
    app, _, api = RESTARTS[case]
    life = first_lives.lives[case]
    ask = (
        "billing: refund_payment order_id=A1 amount=5"
        if app == "handoff"
        else "refund_payment order_id=A1 amount=5"
    )
    agent = "billing" if app == "handoff" else "cashier"
    asked = life.server.client().responses.create(model="fake-model", input=ask)
    assert asked.status == "completed" and asked.output[-1].type == "mcp_approval_request", asked.output
    request = asked.output[-1]
    assert request.server_label == agent
    life.server.kill()

    workdir = tmp_path / "compute-2"
    env = {**fake.env(api), apps.TOOL_LOG_ENV: str(life.tool_log)}
    second = ServerProcess(
        database_url=life.database_url, app=f"tests.agents.apps:{app}", workdir=workdir, env=env
    )
    try:
        second.start(timeout=120)
        assert [p.name for p in workdir.iterdir() if not p.name.startswith("server-")] == [], (
            "the new working directory is not fresh"
        )
        client = second.client()
        mark = fake.mark()
        answered = client.responses.create(
            model="fake-model", previous_response_id=asked.id, input=approval_answer(request.id, True)
        )
        assert answered.status == "completed", answered.error
        assert [i.type for i in answered.output] == ["mcp_call", "message"]
        assert answered.output[0].output == "refunded 5.00 for order A1"
        assert answered.output_text == f"{agent}: Tool refund_payment returned: refunded 5.00 for order A1"
        assert [c.agent for c in fake.calls_since(mark)] == [agent]
        runs = [json.loads(line) for line in life.tool_log.read_text().splitlines()]
        assert [(r["tool"], r["pid"]) for r in runs] == [("refund_payment", second.proc.pid)]  # type: ignore[union-attr]
        again = httpx.post(
            f"{second.base_url}/v1/responses",
            json={"model": "m", "previous_response_id": asked.id, "input": approval_answer(request.id, True)},
            timeout=30,
        )
        assert again.status_code == 409, again.text
        replay = stream_events(second.base_url, answered.id)
        check_sequence(replay, label=case)
        for event in replay:
            check_event(event)
    finally:
        second.kill()
