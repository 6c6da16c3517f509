"""Exactly-once effects across `kill -9` (issue 37): every logical tool call runs to completion
once, finished model calls are not paid again, every output appears once.

Three apps on agent-framework's real OpenAI client against the fake model (tests/journal/apps.py):
one agent with a tool, a Sequential of three agents with a tool each, a workflow of three chained
agent executors with a tool each. Six background responses each; the server (a subprocess) is
killed with SIGKILL several times, at moments chosen by condition, never by sleep:
- after a tool returned: a model call that answers a tool result is in flight (the tool's done
  record committed before its result went back to the model);
- while a tool runs: a tool logged its start and waits (the hold file), not its end.
A new server on the same database recovers, and the next kill waits for that server's own work.

Checks, per response: it completed; per logical tool call (response, tool) exactly one run to
completion, and every start of it under the same idempotency key; model calls at most the ideal
plus one per kill that landed while a call of that response was in flight; the final output's
texts are the uninterrupted run's, each once; the full replay passes `check_sequence`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_responses.testing import FakeCall, FakeModel
from tests.support.servers import ServerProcess
from tests.support.sse import check_sequence, stream_events

pytestmark = pytest.mark.crash

RESPONSES = 6
# Seconds per streamed token of the fake model; while the test waits to kill during a reply
# after a tool, the slower pace (see `Scenario.kill_at`).
TOKEN_DELAY = 0.01
AFTER_TOKEN_DELAY = 0.05


@dataclass(frozen=True)
class App:
    factory: str
    words: str  # what the input says (the tools to call)
    tools: tuple[str, ...]  # the logical tool calls of one response
    model_calls: int  # of one uninterrupted response
    texts: int  # message texts in its final output


APPS = {
    "agent": App("tests.journal.apps:shop_agent", "send_receipt", ("send_receipt",), 2, 1),
    "sequential": App(
        "tests.journal.apps:shop_sequential",
        "check_stock reserve_items send_receipt",
        ("check_stock", "reserve_items", "send_receipt"),
        6,
        1,
    ),
    "chain": App(
        "tests.journal.apps:shop_chain",
        "check_stock reserve_items send_receipt",
        ("check_stock", "reserve_items", "send_receipt"),
        6,
        3,
    ),
}


def _order(i: int) -> str:
    return f"Q{i}Z"


def _tool_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _response_of(call: FakeCall, orders: dict[str, str]) -> str | None:
    text = " ".join(t.text for t in call.prompt.turns)
    for order, rid in orders.items():
        if order in text:
            return rid
    return None


def _after_tool(call: FakeCall) -> bool:
    turns = call.prompt.turns
    return bool(turns) and turns[-1].role == "tool"


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


class Scenario:
    def __init__(self, app: App, database_url: str, tmp_path: Path, fake: FakeModel, api: str) -> None:
        self.app = app
        self.database_url = database_url
        self.tmp = tmp_path
        self.fake = fake
        self.log = tmp_path / "tools.jsonl"
        self.hold = tmp_path / "hold"
        self.env = {
            **fake.env(api),
            "JOURNAL_TOOL_LOG": str(self.log),
            "JOURNAL_TOOL_HOLD": str(self.hold),
            "DURABLE_RESPONSES_LEASE_SECONDS": "5",
        }
        self.lives = 0
        self.orders: dict[str, str] = {}  # order id -> response id
        # Response -> kills that landed during its model call (from the host's view: until the
        # call's record commits, which the test cannot see, so a call that finished at the fake
        # counts until the response shows later activity).
        self.in_flight_kills: Counter[str] = Counter()
        # (tool, order) -> kills that landed between its end and its result reaching the model
        # (the at-least-once gap the idempotency key closes: it may run again, under its key).
        self.tool_windows: Counter[tuple[str, str]] = Counter()
        self.finished_at: dict[int, float] = {}  # fake call index -> when the test saw it end
        self.kills: list[str] = []
        self.kill_marks: list[int] = []  # how many model calls there were at each kill
        self.recompleted = 0  # logical tool calls that ran to completion twice (same key)
        self.journal_counts: Counter[str] = Counter()  # the operator view's, over the responses

    def start(self) -> ServerProcess:
        self.lives += 1
        return ServerProcess(
            database_url=self.database_url,
            app=self.app.factory,
            workdir=self.tmp / f"life{self.lives}",
            env=self.env,
        ).start()

    def create(self, server: ServerProcess) -> None:
        for i in range(RESPONSES):
            body = {"model": "m", "input": f"{self.app.words} order_id={_order(i)}", "background": True}
            r = httpx.post(f"{server.base_url}/v1/responses", json=body, timeout=30)
            assert r.status_code == 200, r.text
            self.orders[_order(i)] = r.json()["id"]

    def watch(self) -> None:
        now = time.time()
        for call in self.fake.calls:
            if call.finished and call.index not in self.finished_at:
                self.finished_at[call.index] = now

    def kill(self, server: ServerProcess) -> None:
        pid = server.proc.pid if server.proc else None
        server.kill()
        now = time.time()
        calls = self.fake.calls
        self.kill_marks.append(len(calls))
        log = _tool_log(self.log)
        for order, rid in self.orders.items():
            mine = [c for c in calls if _response_of(c, self.orders) == rid]
            if not mine:
                continue
            last = mine[-1]
            ended = self.finished_at.get(last.index, now) if last.finished else None
            if ended is None or not any(e["args"].get("order_id") == order and e["t"] > ended for e in log):
                self.in_flight_kills[rid] += 1
        handed_back = " ".join(t.text for c in calls for t in c.prompt.turns if t.role == "tool")
        for e in log:
            order = e["args"].get("order_id")
            if e["event"] == "done" and e["pid"] == pid and f"{e['tool']} did {order}" not in handed_back:
                self.tool_windows[(e["tool"], order)] += 1

    def kill_at(self, server: ServerProcess, kind: str, mark: int) -> bool:
        """Kill `server` once the kill point `kind` is reached: "tool" (a tool it started is
        running: the hold file keeps it running) or "after" (a model call answering a tool
        result runs, made since `mark`). False: every response ended first (no kill)."""
        pid = server.proc.pid if server.proc else None
        client = server.client()

        def reached() -> bool:
            if kind == "tool":
                return any(e["event"] == "start" and e["pid"] == pid for e in _tool_log(self.log))
            return any(_after_tool(c) and not c.finished for c in self.fake.calls[mark:])

        ended: set[str] = set()
        deadline = time.monotonic() + 90
        next_look = 0.0
        # A reply after a tool streams for a tenth of a second at the usual pace; on a loaded
        # machine a look at the responses takes longer than that, and every reply could end
        # between two looks (seen at load 15-20: no kill "after"): slower tokens keep the point
        # in view.
        self.fake.token_delay = AFTER_TOKEN_DELAY if kind == "after" else TOKEN_DELAY
        try:
            while not reached():
                self.watch()
                if time.monotonic() > deadline:
                    raise AssertionError(f"timed out waiting for the kill point {kind!r}")
                if time.monotonic() > next_look:
                    next_look = time.monotonic() + 0.5
                    for r in set(self.orders.values()) - ended:
                        if client.responses.retrieve(r).status not in ("completed", "failed"):
                            break
                        ended.add(r)
                    else:
                        return False
                time.sleep(0.005)
            self.kill(server)
        finally:
            self.fake.token_delay = TOKEN_DELAY
        self.kills.append(kind)
        return True

    def finish(self, server: ServerProcess) -> None:
        client = server.client()
        for rid in self.orders.values():
            _wait(
                lambda rid=rid: client.responses.retrieve(rid).status not in ("queued", "in_progress"),
                120,
                rid,
            )
        self.check(server)

    def check(self, server: ServerProcess) -> None:
        client = server.client()
        log = _tool_log(self.log)
        calls = self.fake.calls
        per_response: dict[str, int] = Counter()
        for call in calls:
            rid = _response_of(call, self.orders)
            assert rid is not None, call.prompt.turns
            per_response[rid] += 1
        problems: list[str] = []
        for order, rid in self.orders.items():
            final = client.responses.retrieve(rid)
            if final.status != "completed":
                problems.append(f"{rid}: {final.status} {final.error}")
                continue
            for tool in self.app.tools:
                runs = [e for e in log if e["tool"] == tool and e["args"].get("order_id") == order]
                done = [e for e in runs if e["event"] == "done"]
                keys = {e["key"] for e in runs}
                allowed_runs = 1 + self.tool_windows[(tool, order)]
                self.recompleted += len(done) > 1
                if not 1 <= len(done) <= allowed_runs or len(keys) != 1 or None in keys:
                    problems.append(
                        f"{rid} {tool}: {len(done)} completions (at most {allowed_runs}), keys {keys}"
                    )
            allowed = self.app.model_calls + self.in_flight_kills[rid]
            if per_response[rid] > allowed:
                trail = []
                for c in calls:
                    trail.extend("KILL" for m in self.kill_marks if m == c.index)
                    if _response_of(c, self.orders) == rid:
                        trail.append(
                            f"{c.agent}:{','.join(c.tool_calls) or 'text'}{'' if c.finished else '(cut)'}"
                        )
                problems.append(f"{rid}: {per_response[rid]} model calls, at most {allowed} allowed: {trail}")
            texts = [
                c.text
                for item in final.output
                if item.type == "message"
                for c in item.content
                if c.type == "output_text"
            ]
            if len(texts) != self.app.texts or len(set(texts)) != len(texts):
                problems.append(f"{rid}: output texts {texts}")
            check_sequence(stream_events(server.base_url, rid), label=rid)
            counts = httpx.get(f"{server.base_url}/v1/admin/responses/{rid}", timeout=10).json()["journal"][
                "counts"
            ]
            for outcome in ("recorded", "replayed", "rerun"):
                self.journal_counts[outcome] += counts[outcome]
        assert not problems, "\n".join(problems)
        # The operator view counts the calls each response recorded, replayed and ran again.
        assert self.journal_counts["recorded"] >= RESPONSES * (self.app.model_calls + len(self.app.tools))
        assert self.journal_counts["replayed"] > 0 and self.journal_counts["rerun"] > 0, self.journal_counts


@pytest.mark.parametrize("name", list(APPS))
def test_kill_9_repeats_no_finished_tool_or_model_call(name: str, database_url: str, tmp_path: Path) -> None:
    app = APPS[name]
    with FakeModel(token_delay=TOKEN_DELAY) as fake:
        scenario = Scenario(
            app, database_url, tmp_path, fake, "responses" if name == "sequential" else "chat"
        )
        server: ServerProcess | None = None
        try:
            for kind in ("tool", "after", "tool", "after"):
                if kind == "tool":
                    scenario.hold.touch()
                mark = fake.mark()
                server = scenario.start()
                if not scenario.orders:
                    scenario.create(server)
                killed = scenario.kill_at(server, kind, mark)
                scenario.hold.unlink(missing_ok=True)
                if not killed:
                    break
                server = None
            if server is None:
                server = scenario.start()
            scenario.finish(server)
        finally:
            scenario.hold.unlink(missing_ok=True)
            if server is not None:
                server.kill()
    assert "tool" in scenario.kills and "after" in scenario.kills, scenario.kills
    print(
        f"{name}: kills {scenario.kills}; {len(fake.calls)} model calls "
        f"({RESPONSES * app.model_calls} ideal, {sum(scenario.in_flight_kills.values())} kills in a call); "
        f"tool calls caught between their end and their result reaching the model: "
        f"{sum(scenario.tool_windows.values())}, of which ran again (same key): {scenario.recompleted}; "
        f"operator view: {dict(scenario.journal_counts)}"
    )
