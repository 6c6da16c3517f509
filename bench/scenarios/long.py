"""Long responses (issue 17): one response of 1,000, 10,000 and 100,000 events, made and replayed.

Ours only (the floor keeps no events; the existing host is not asked to replay). Each response is
the `burst` workflow (N outputs in one superstep, 6 events each, plus 4: about 6N + 4 events),
created as a background stream. Not the `tokens` workflow: agent-framework alone spends ~0.25 ms
of CPU per streamed token through `WorkflowAgent` (measured here), so 100,000 tokens would take
the framework alone ~25 s and the run would not fit its 15 minutes; a burst's output costs it
~0.05 ms. What is measured (storage, replay) is the same for every kind of event. Then, for
each length:
- **create**: ms per event of the creating stream (from its first byte to its end / its events;
  the fixed cost of a response left out, as for the replays);
- **full replay**: `GET /responses/{id}?stream=true` from the start: time to first byte, ms per
  event, and the server's resident memory above its level before the replay (peak, sampled every
  5 ms: bench/memory.py);
- **tail replay**: `starting_after` = the last sequence number - 100: time to first byte, total,
  and the memory above before; it should not depend on the length at all.
Flat is the goal: the cost per event at 100,000 within 20% of that at 1,000 (slowest / fastest of
the three lengths at most 1.20), and the tail replay's time the same at every length (no work that
scans what came before).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx

from bench.config import Sizes, log
from bench.hosts.base import Host, Session
from bench.hosts.ours import OursSession
from bench.memory import PeakRSS

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


async def _one(base: str, pid: int, body: dict[str, Any], outputs: int) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base, timeout=600) as c:
        t0 = time.perf_counter()
        req = {"model": "bench", "input": str(outputs), **body, "stream": True}
        async with c.stream("POST", "/responses", json=req) as r:
            create = await _read(r, t0)
        rid = create["id"]
        with PeakRSS(pid) as mem:
            t0 = time.perf_counter()
            async with c.stream("GET", f"/responses/{rid}", params={"stream": "true"}) as r:
                full = await _read(r, t0)
        full["rss_above_mb"] = (mem.peak - mem.before) / 1e6
        after = max(0, (full["last_seq"] or 0) - 100)
        with PeakRSS(pid) as mem:
            t0 = time.perf_counter()
            params = {"stream": "true", "starting_after": str(after)}
            async with c.stream("GET", f"/responses/{rid}", params=params) as r:
                tail = await _read(r, t0)
        tail["rss_above_mb"] = (mem.peak - mem.before) / 1e6
    return {"create": create, "full": full, "tail": tail}


def _flat(values: list[float | None]) -> float | None:
    vals = [v for v in values if v]
    return max(vals) / min(vals) if len(vals) == len(values) and vals else None


def run(session: Session, host: Host, sizes: Sizes, want: set[str]) -> dict[str, Any]:
    assert isinstance(session, OursSession)
    pid = session.pid
    out: dict[str, Any] = {"lengths": {}}
    body = {"background": True}
    asyncio.run(_one(session.base_url, pid, body, 50))  # warm: the first replay's imports and caches
    for n in sizes.long_events:
        r = asyncio.run(_one(session.base_url, pid, body, max(1, (n - 4) // 6)))
        out["lengths"][n] = r
        log(
            f"{host.key} long {n}: {r['create']['events']} events, create {r['create']['per_event_ms']:.4f} ms/event; "
            f"replay ttfb {r['full']['ttfb_ms']:.1f} ms, {r['full']['per_event_ms']:.4f} ms/event, "
            f"+{r['full']['rss_above_mb']:.1f} MB; tail ttfb {r['tail']['ttfb_ms']:.1f} ms, "
            f"+{r['tail']['rss_above_mb']:.1f} MB"
        )
    lengths = out["lengths"]
    out["create_flatness"] = _flat([v["create"]["per_event_ms"] for v in lengths.values()])
    out["replay_flatness"] = _flat([v["full"]["per_event_ms"] for v in lengths.values()])
    out["tail_flatness"] = _flat([v["tail"]["total_ms"] for v in lengths.values()])
    return {"long": out}
