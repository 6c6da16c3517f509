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
  events; the median of 3 pairs at 1,000 events, 2 at 10,000, 1 at 100,000);
- **full replay**: `GET /responses/{id}?stream=true` from the start: time to first byte, ms per
  event (paired the same way with the 1-output response's replay; the last pair made is
  replayed 21 times at 1,000 events, 3 at 10,000 and 100,000, the lengths taking turns in 3
  rounds so the machine's drift falls on all alike; the median), and the server's resident
  memory above its level before the replay (peak, sampled every 5 ms: bench/memory.py);
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
    async for chunk in r.aiter_raw():
        if not first:
            first = time.perf_counter()
        events += chunk.count(b"event: ")
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


async def _replay(c: httpx.AsyncClient, pid: int, rid: str, after: int | None = None) -> dict[str, Any]:
    params = {"stream": "true"} if after is None else {"stream": "true", "starting_after": str(after)}
    with PeakRSS(pid) as mem:
        t0 = time.perf_counter()
        async with c.stream("GET", f"/responses/{rid}", params=params) as r:
            out = await _read(r, t0)
    out["rss_above_mb"] = (mem.peak - mem.before) / 1e6
    return out


def _per_event(long: dict[str, Any], short: dict[str, Any]) -> float | None:
    """ms per event of `long` beyond `short` (the fixed cost of a response subtracted)."""
    extra = long["events"] - short["events"]
    return (long["total_ms"] - short["total_ms"]) / extra if extra > 0 else None


async def _make(c: httpx.AsyncClient, body: dict[str, Any], outputs: int, reps: int) -> dict[str, Any]:
    """`reps` pairs (a 1-output response, then one of `outputs`) created; per event = a pair's
    difference / its difference in events. The last pair is the one replayed."""
    create: list[float] = []
    for _ in range(reps):
        short = await _create(c, body, 1)
        made = await _create(c, body, outputs)
        create.append(_per_event(made, short) or math.nan)
    return {
        "events": made["events"],
        "create_ms_per_event": median(create),
        "create": made,
        "short": short,
        "reps": reps,
    }


async def _replay_rounds(
    c: httpx.AsyncClient, pid: int, made: dict[int, dict[str, Any]], rounds: int
) -> None:
    """Full replays of every length's pair, the lengths taking turns round after round (the
    machine's speed drifts by tens of percent over minutes: measured one length after another,
    the ratio of two lengths moved from 1.2 to 2.1 between three runs of the same commit).
    Each round replays a length's pair 7 times at 1,000 events (where a pair's difference is
    ~4 ms), once at 10,000 and 100,000."""
    per_event: dict[int, list[float]] = {n: [] for n in made}
    for _ in range(rounds):
        for n, m in made.items():
            for _ in range(max(1, min(7, 7_000 // n))):
                short_replay = await _replay(c, pid, m["short"]["id"])
                m["full"] = await _replay(c, pid, m["create"]["id"])
                per_event[n].append(_per_event(m["full"], short_replay) or math.nan)
    for n, m in made.items():
        m["replay_ms_per_event"] = median(per_event[n])
        m["replays"] = len(per_event[n])


async def _lengths(base: str, pid: int, body: dict[str, Any], lengths: tuple[int, ...]) -> dict[int, Any]:
    made: dict[int, dict[str, Any]] = {}
    async with httpx.AsyncClient(base_url=base, timeout=600) as c:
        warm = await _make(c, body, 50, 1)  # the first replay's caches
        await _replay(c, pid, warm["create"]["id"])
        for n in lengths:
            made[n] = await _make(c, body, max(1, (n - 4) // 6), max(1, min(3, 100_000 // (n * 4))))
        await _replay_rounds(c, pid, made, rounds=3)
        for m in made.values():
            m["tail"] = await _replay(c, pid, m["create"]["id"], max(0, (m["full"]["last_seq"] or 0) - 100))
    return made


def _flat(values: list[float | None]) -> float | None:
    vals = [v for v in values if v and not math.isnan(v)]
    return max(vals) / min(vals) if len(vals) == len(values) and vals else None


def run(session: Session, host: Host, sizes: Sizes, want: set[str]) -> dict[str, Any]:
    assert isinstance(session, OursSession)
    pid = session.pid
    out: dict[str, Any] = {"lengths": {}}
    body = {"background": True}
    out["lengths"] = asyncio.run(_lengths(session.base_url, pid, body, sizes.long_events))
    for n, r in out["lengths"].items():
        log(
            f"{host.key} long {n}: {r['events']} events, create {r['create_ms_per_event']:.4f} ms/event; "
            f"replay ttfb {r['full']['ttfb_ms']:.1f} ms, {r['replay_ms_per_event']:.4f} ms/event, "
            f"+{r['full']['rss_above_mb']:.1f} MB; tail ttfb {r['tail']['ttfb_ms']:.1f} ms, "
            f"+{r['tail']['rss_above_mb']:.1f} MB ({r['reps']} pairs made, {r['replays']} replayed)"
        )
    lengths = out["lengths"]
    out["create_flatness"] = _flat([v["create_ms_per_event"] for v in lengths.values()])
    out["replay_flatness"] = _flat([v["replay_ms_per_event"] for v in lengths.values()])
    out["tail_flatness"] = _flat([v["tail"]["total_ms"] for v in lengths.values()])
    return {"long": out}
