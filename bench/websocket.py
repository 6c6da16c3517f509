"""WebSocket mode against HTTP for short sequential turns: `python -m bench.websocket`.

One server (`python -m durable_responses serve`, echo app, live delivery) on a fresh database.
A round is N turns, each read to its terminal event before the next is sent: over one WebSocket
(`response.create` messages), or as `POST /v1/responses` with `stream=true` on one keep-alive
HTTP connection (httpx), optionally chained by `previous_response_id`. Rounds alternate
between the two (WebSocket first, then HTTP, repeated), so the machine's load falls on both alike;
the figures are the medians of the rounds and of the paired ratios (WebSocket / HTTP): wall time
per turn (client and server) and the server's CPU per turn (its threads' scheduler time, and its
PostgreSQL backends' CPU).

Not part of `python -m bench`'s table: there is no target for it; it says what the transport
changes per turn.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

from bench.cpu import ProcessCPU, run_seconds
from bench.hosts.ours import fresh_database, ours_env, ours_server
from bench.hosts.process import serving
from durable_responses.protocol.events import TERMINAL_EVENT_TYPES
from durable_responses.store.settings import LEASE_SECONDS

APP = "durable_responses.examples.echo:echo"


def _ws_round(base: str, n: int, chained: bool) -> None:
    previous = None
    with connect(base.replace("http://", "ws://") + "/v1/responses", open_timeout=30) as ws:
        for i in range(n):
            body: dict[str, Any] = {"type": "response.create", "input": f"turn {i}"}
            if chained and previous:
                body["previous_response_id"] = previous
            ws.send(json.dumps(body))
            while True:
                event = json.loads(ws.recv(timeout=60))
                if event["type"] == "error":
                    raise RuntimeError(event)
                if event["type"] == "response.created":
                    previous = event["response"]["id"]
                if event["type"] in TERMINAL_EVENT_TYPES:
                    break


def _http_round(base: str, n: int, chained: bool) -> None:
    previous = None
    with httpx.Client(base_url=base, timeout=60) as client:
        for i in range(n):
            body: dict[str, Any] = {"input": f"turn {i}", "stream": True}
            if chained and previous:
                body["previous_response_id"] = previous
            with client.stream("POST", "/v1/responses", json=body) as r:
                r.raise_for_status()
                for line in r.iter_lines():
                    if not line.startswith("data: "):
                        continue
                    event = json.loads(line[6:])
                    if event["type"] == "response.created":
                        previous = event["response"]["id"]
                    if event["type"] in TERMINAL_EVENT_TYPES:
                        break


def _measure(fn: Callable[[], None], cpu: ProcessCPU, n: int) -> tuple[float, float]:
    """(wall ms per turn, server CPU ms per turn) of one round."""
    cpu.refresh()
    cpu0, pg0 = run_seconds(cpu.pids), cpu.seconds()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    cpu.refresh()
    server = run_seconds(cpu.pids) - cpu0
    if cpu.database:  # the backends' CPU (ticks of 10 ms: coarse, but a round is long)
        server = max(server, cpu.seconds() - pg0)
    return wall / n * 1000, server / n * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.websocket", description=__doc__.split("\n")[0])
    parser.add_argument("--dialect", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--turns", type=int, default=100, help="turns per round")
    parser.add_argument("--rounds", type=int, default=6, help="rounds of each transport")
    parser.add_argument("--chained", action="store_true", help="chain the turns by previous_response_id")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-ws-") as tmp:
        work = Path(tmp)
        with fresh_database(args.dialect, work) as url:
            srv = ours_server(url, APP, "live", work, ours_env(LEASE_SECONDS))
            with serving(srv):
                assert srv.proc is not None
                database = url.rsplit("/", 1)[-1] if args.dialect == "postgresql" else None
                cpu = ProcessCPU(srv.proc.pid, database)
                base = srv.base_url
                rounds = {
                    "websocket": lambda: _ws_round(base, args.turns, args.chained),
                    "http": lambda: _http_round(base, args.turns, args.chained),
                }
                for fn in rounds.values():  # warm-up: imports, pools, caches
                    fn()
                seen: dict[str, list[tuple[float, float]]] = {k: [] for k in rounds}
                for _ in range(args.rounds):
                    for key, fn in rounds.items():
                        seen[key].append(_measure(fn, cpu, args.turns))
    chained = "chained" if args.chained else "independent"
    print(f"{args.dialect}, {args.rounds} rounds of {args.turns} {chained} turns, alternated")
    for key, values in seen.items():
        walls = [w for w, _ in values]
        cpus = [c for _, c in values]
        print(
            f"  {key:9} wall ms/turn median {statistics.median(walls):6.2f} "
            f"(rounds {', '.join(f'{w:.1f}' for w in walls)}); "
            f"server CPU ms/turn median {statistics.median(cpus):6.2f}"
        )
    pairs = list(zip(seen["websocket"], seen["http"], strict=True))
    wall_ratio = statistics.median(w / h for (w, _), (h, _) in pairs)
    cpu_ratio = statistics.median(w / h for (_, w), (_, h) in pairs)
    print(f"  websocket/http, median of paired rounds: wall {wall_ratio:.2f}x, server CPU {cpu_ratio:.2f}x")


if __name__ == "__main__":
    main()
