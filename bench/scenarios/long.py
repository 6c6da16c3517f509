"""Long responses (issue 17): one response of 1,000, 10,000 and 100,000 events, made and replayed.

Ours only (the floor keeps no events; the existing host is not asked to replay). Each response is
the `burst` workflow (N outputs in one superstep, 6 events each, plus 4: about 6N + 4 events),
created as a background stream. Not the `tokens` workflow: agent-framework alone spends ~0.25 ms
of CPU per streamed token through `WorkflowAgent` (measured here), so 100,000 tokens would take
the framework alone ~25 s and the run would not fit its 15 minutes; a burst's output costs it
~0.05 ms. What is measured (storage, replay) is the same for every kind of event. Then, for
each length:
- **create**: ms per event of the creating stream, beyond a 1-output response created just before
  it (the fixed cost of a response subtracted: the difference of the pair over its difference in
  events; the median of 7 pairs at 1,000 events, 2 at 10,000, 1 at 100,000);
- **full replay**: `GET /responses/{id}?stream=true` from the start: time to first byte, ms per
  event and the server's CPU per event (its threads and its database's backends, to the
  nanosecond: bench/cpu.py `run_seconds`), each paired the same way with the 1-output
  response's replay; 35 replays at 1,000 events, 5 at 10,000 and 100,000, the lengths taking
  turns in 5 rounds so the machine's drift falls on all alike, and no response replayed twice
  in a row (the median; with 3 rounds, the median of three replays at 10,000 moved the
  flatness from 1.03 to 1.50 between runs of the same code on a noisy VM); and the server's
  resident memory above its level before the replay (peak, sampled every 5 ms: bench/memory.py);
- **tail replay**: `starting_after` = the last sequence number - 100: time to first byte, total,
  and the memory above before; it should not depend on the length at all.
Flat is the goal: the cost per event at 100,000 within 20% of that at 1,000 (slowest / fastest of
the three lengths at most 1.20), and the tail replay's time the same at every length (no work that
scans what came before).
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from typing import Any

import httpx

from bench.config import Sizes, log
from bench.cpu import ProcessCPU, run_seconds
from bench.hosts.base import Host, Session
from bench.hosts.ours import OursSession
from bench.memory import PeakRSS
from bench.stats import median

NAMES = ("long",)
APP = "burst"

_ID = re.compile(rb'"id":\s*"(resp_[^"]+)"')
_SEQ = re.compile(rb"\nid: (\d+)")


async def _read(r: httpx.Response, t0: float) -> dict[str, Any]:
    first = 0.0
    events = 0
    rid = b""
    last_seq: int | None = None
    tail = b""  # the end of the previous chunk: an `event: ` split between two chunks counts
    async for chunk in r.aiter_raw():
        if not first:
            first = time.perf_counter()
        events += (tail + chunk[:6]).count(b"event: ") + chunk.count(b"event: ")
        tail = chunk[-6:]
        if not rid:
            m = _ID.search(chunk)
            rid = m.group(1) if m else b""
        # The last frame's id (the final event's data is the whole response: megabytes at the
        # longest length, so only the id lines are looked for).
        i = chunk.rfind(b"\nid: ")
        if i >= 0:
            m = _SEQ.match(chunk, i)
            last_seq = int(m.group(1)) if m else last_seq
    end = time.perf_counter()
    return {
        "ttfb_ms": (first - t0) * 1000 if first else None,
        "total_ms": (end - t0) * 1000,
        "events": events,
        "id": rid.decode(),
        "last_seq": last_seq,
        # After the first byte: the fixed cost of a request (and of the first page) left out.
        "per_event_ms": (end - first) * 1000 / events if events and first else None,
    }


async def _create(c: httpx.AsyncClient, body: dict[str, Any], outputs: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    req = {"model": "bench", "input": str(outputs), **body, "stream": True}
    async with c.stream("POST", "/responses", json=req) as r:
        return await _read(r, t0)


async def _replay(
    c: httpx.AsyncClient, server: ProcessCPU, rid: str, after: int | None = None
) -> dict[str, Any]:
    params = {"stream": "true"} if after is None else {"stream": "true", "starting_after": str(after)}
    with PeakRSS(server.pid) as mem:
        cpu0 = run_seconds(server.pids)
        t0 = time.perf_counter()
        async with c.stream("GET", f"/responses/{rid}", params=params) as r:
            out = await _read(r, t0)
        out["cpu_ms"] = (run_seconds(server.pids) - cpu0) * 1000
    out["rss_above_mb"] = (mem.peak - mem.before) / 1e6
    return out


def _per_event(long: dict[str, Any], short: dict[str, Any], key: str = "total_ms") -> float | None:
    """`key` (ms) per event of `long` beyond `short` (the fixed cost of a response subtracted)."""
    extra = long["events"] - short["events"]
    return (long[key] - short[key]) / extra if extra > 0 else None


async def _make(c: httpx.AsyncClient, body: dict[str, Any], outputs: int, reps: int) -> dict[str, Any]:
    """`reps` pairs (a 1-output response, then one of `outputs`) created; per event = a pair's
    difference / its difference in events. The last pair is the one replayed."""
    create: list[float] = []
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for _ in range(reps):
        short = await _create(c, body, 1)
        made = await _create(c, body, outputs)
        create.append(_per_event(made, short) or math.nan)
        pairs.append((short, made))
    return {
        "events": made["events"],
        "create_ms_per_event": median(create),
        "create": made,
        "short": short,
        "pairs": pairs,
        "reps": reps,
    }


async def _replay_rounds(
    c: httpx.AsyncClient, server: ProcessCPU, made: dict[int, dict[str, Any]], rounds: int
) -> None:
    """Full replays of every length's pairs, the lengths taking turns round after round (the
    machine's speed drifts by tens of percent over minutes: measured one length after another,
    the ratio of two lengths moved from 1.2 to 2.1 between three runs of the same commit).
    Each round replays 7 pairs at 1,000 events (where a pair's difference is ~3 ms), one at
    10,000 and 100,000, a pair at most once per round: a 1,000-event response replayed again
    at once is read from warm caches (its rows: ~1,000 events stored as runs of a write's
    events, ~170 output items; the database's buffers, the server's memory), which no longer
    response enjoys; replayed 7 times in a row, its cost per event came out 1.4x lower than
    when each replay was of another response (scratch, raw-socket client: 1.10 vs 1.56 us per
    event; 10,000 and 100,000: 2.2 us either way)."""
    wall: dict[int, list[float]] = {n: [] for n in made}
    cpu: dict[int, list[float]] = {n: [] for n in made}
    turn = 0
    for _ in range(rounds):
        for n, m in made.items():
            for _ in range(max(1, min(7, 7_000 // n))):
                short, long = m["pairs"][turn % len(m["pairs"])]
                turn += 1
                short_replay = await _replay(c, server, short["id"])
                m["full"] = await _replay(c, server, long["id"])
                wall[n].append(_per_event(m["full"], short_replay) or math.nan)
                cpu[n].append((_per_event(m["full"], short_replay, "cpu_ms") or math.nan) * 1000)
    for n, m in made.items():
        m["replay_ms_per_event"] = median(wall[n])
        m["replay_cpu_us_per_event"] = median(cpu[n])
        m["replays"] = len(wall[n])
        del m["pairs"]  # (not for the results file)


async def _lengths(
    base: str, server: ProcessCPU, body: dict[str, Any], lengths: tuple[int, ...]
) -> dict[int, Any]:
    made: dict[int, dict[str, Any]] = {}
    async with httpx.AsyncClient(base_url=base, timeout=600) as c:
        warm = await _make(c, body, 50, 1)  # the first replay's caches
        server.refresh()  # the server's threads and its database's backends, once warm
        await _replay(c, server, warm["create"]["id"])
        for n in lengths:
            made[n] = await _make(c, body, max(1, (n - 4) // 6), max(1, min(7, 20_000 // n)))
        await _replay_rounds(c, server, made, rounds=5)
        for m in made.values():
            m["tail"] = await _replay(
                c, server, m["create"]["id"], max(0, (m["full"]["last_seq"] or 0) - 100)
            )
    return made


def _flat(values: list[float | None]) -> float | None:
    vals = [v for v in values if v and not math.isnan(v)]
    return max(vals) / min(vals) if len(vals) == len(values) and vals else None


def run(session: Session, host: Host, sizes: Sizes, want: set[str]) -> dict[str, Any]:
    assert isinstance(session, OursSession)
    server = ProcessCPU(session.pid, session.database)
    out: dict[str, Any] = {"lengths": {}}
    body = {"background": True}
    out["lengths"] = asyncio.run(_lengths(session.base_url, server, body, sizes.long_events))
    for n, r in out["lengths"].items():
        log(
            f"{host.key} long {n}: {r['events']} events, create {r['create_ms_per_event']:.4f} ms/event; "
            f"replay ttfb {r['full']['ttfb_ms']:.1f} ms, {r['replay_ms_per_event']:.4f} ms/event, "
            f"{r['replay_cpu_us_per_event']:.2f} us CPU/event, "
            f"+{r['full']['rss_above_mb']:.1f} MB; tail ttfb {r['tail']['ttfb_ms']:.1f} ms, "
            f"+{r['tail']['rss_above_mb']:.1f} MB ({r['reps']} pairs made, {r['replays']} replayed)"
        )
    lengths = out["lengths"]
    out["create_flatness"] = _flat([v["create_ms_per_event"] for v in lengths.values()])
    out["replay_flatness"] = _flat([v["replay_ms_per_event"] for v in lengths.values()])
    out["replay_cpu_flatness"] = _flat([v["replay_cpu_us_per_event"] for v in lengths.values()])
    out["tail_flatness"] = _flat([v["tail"]["total_ms"] for v in lengths.values()])
    return {"long": out}
