"""Footprint (issue 17): memory per in-flight response, database bytes per response, checkpoint bytes.

Ours only, one server session per workflow (the scenario opens the extra ones through its host):
- **idle in flight** (`ticks` "1 delay=600": a run whose superstep waits, like a slow tool or
  model): the server's resident memory above its level before, over `Sizes.footprint_idle`
  background responses all in flight at once, per response;
- **paused awaiting input** (`asks`: the workflow pauses at once on `request_info`):
  `Sizes.footprint_paused` background responses, each ended on its pending request (a paused response is not
  in flight in this server: its checkpoint and pending request are rows, its run is gone):
  memory above before, and database bytes, per response;
- **database bytes per finished response** of the 1000-output burst and the 100-superstep
  countdown (`Sizes.footprint_bytes_n` each; bench/ops.py `used_bytes`: SQLite's pages in use
  after a WAL checkpoint, PostgreSQL's tables and indexes after VACUUM; checkpoints pruned at the
  end, events and items kept, retention off);
- **checkpoint bytes per superstep**: `checkpoint_log.bytes` (every checkpoint committed, kept
  after pruning) over the countdowns' supersteps: mean, first and last superstep (flat is the
  goal: a checkpoint should not grow with the run).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Any

import httpx

from bench.config import Sizes, log
from bench.hosts.base import Host, Session
from bench.hosts.ours import OursSession
from bench.memory import rss_bytes
from bench.ops import used_bytes

NAMES = ("footprint",)
APP = "ticks"


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url[len("sqlite:///") :])
        try:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
        finally:
            conn.close()
    import asyncpg  # type: ignore[import-untyped]

    async def run() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(url.replace("postgresql://", "postgres://"))
        try:
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    return asyncio.run(run())


async def _create(base: str, text: str, n: int, *, stream: bool = False) -> list[dict[str, Any]]:
    """n background responses to `text` (50 requests at a time); their JSON (or stream ends)."""
    sem = asyncio.Semaphore(50)
    out: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=base, timeout=300) as c:

        async def one() -> None:
            async with sem:
                body = {"model": "bench", "input": text, "background": True}
                if stream:
                    async with c.stream("POST", "/responses", json={**body, "stream": True}) as r:
                        async for _ in r.aiter_raw():
                            pass
                        out.append({"status_code": r.status_code})
                    return
                r = await c.post("/responses", json=body)
                out.append({"status_code": r.status_code, **(r.json() if r.status_code == 200 else {})})

        await asyncio.gather(*(one() for _ in range(n)))
    return out


async def _statuses(base: str, ids: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        for rid in ids:
            status = (await c.get(f"/responses/{rid}")).json().get("status", "?")
            counts[status] = counts.get(status, 0) + 1
    return counts


def _settled_rss(pid: int, seconds: float = 2.0) -> int:
    """RSS after a pause (the allocator settles; runs reach their waiting point)."""
    time.sleep(seconds)
    return rss_bytes(pid)


def _idle(session: OursSession, sizes: Sizes) -> dict[str, Any]:
    n = sizes.footprint_idle
    asyncio.run(_create(session.base_url, "1 delay=0", 3, stream=True))  # warm
    before = _settled_rss(session.pid)
    made = asyncio.run(_create(session.base_url, "1 delay=600", n))
    after = _settled_rss(session.pid)
    ids = [m["id"] for m in made if m.get("id")]
    statuses = asyncio.run(_statuses(session.base_url, ids[:: max(1, len(ids) // 50)]))
    return {
        "responses": len(ids),
        "refused": n - len(ids),
        "rss_before_mb": before / 1e6,
        "rss_after_mb": after / 1e6,
        "kb_per_response": (after - before) / 1e3 / max(1, len(ids)),
        "sampled_statuses": statuses,
    }


def _paused(host: Host, sizes: Sizes) -> dict[str, Any]:
    n = sizes.footprint_paused
    with host.session("asks", "footprint-asks") as s:
        assert isinstance(s, OursSession)
        url = s.database_url
        asyncio.run(_create(s.base_url, "warm", 3, stream=True))
        before, db0 = _settled_rss(s.pid), used_bytes(url)
        made = asyncio.run(_create(s.base_url, "approve me", n, stream=True))
        after, db1 = _settled_rss(s.pid), used_bytes(url)
        pending = _query(url, "SELECT count(*) FROM pending_requests")[0][0]
    return {
        "responses": sum(1 for m in made if m["status_code"] == 200),
        "pending_requests": int(pending),
        "kb_per_response": (after - before) / 1e3 / n,
        "db_bytes_per_response": (db1 - db0) / n,
    }


def _bytes(host: Host, app: str, text: str, sizes: Sizes) -> dict[str, Any]:
    n = sizes.footprint_bytes_n
    with host.session(app, f"footprint-{app}") as s:
        assert isinstance(s, OursSession)
        url = s.database_url
        asyncio.run(_create(s.base_url, text, 1, stream=True))  # the schema's first pages
        before = used_bytes(url)
        asyncio.run(_create(s.base_url, text, n, stream=True))
        out: dict[str, Any] = {"bytes_per_response": (used_bytes(url) - before) / n}
        rows = _query(url, "SELECT response_id, seq, bytes FROM checkpoint_log ORDER BY response_id, seq")
    per: dict[str, list[int]] = {}
    for rid, _seq, size in rows:
        per.setdefault(str(rid), []).append(int(size))
    runs = [v for v in per.values() if len(v) > 2]
    if runs:
        sizes_all = [b for v in runs for b in v]
        out["checkpoint_bytes_mean"] = sum(sizes_all) / len(sizes_all)
        out["checkpoint_bytes_first"] = sum(v[1] for v in runs) / len(runs)  # v[0]: before the first step
        out["checkpoint_bytes_last"] = sum(v[-1] for v in runs) / len(runs)
        out["checkpoints_per_response"] = len(sizes_all) / len(runs)
    return out


def run(session: Session, host: Host, sizes: Sizes, want: set[str]) -> dict[str, Any]:
    assert isinstance(session, OursSession)
    # The sessions of their own first, while this one is idle; the in-flight responses last (they
    # stay in flight until this session's server stops).
    out: dict[str, Any] = {"paused": _paused(host, sizes)}
    log(f"{host.key} footprint paused: {out['paused']}")
    out["burst"] = _bytes(host, "burst", str(sizes.burst_outputs), sizes)
    out["countdown"] = _bytes(host, "steps", str(sizes.countdown), sizes)
    log(f"{host.key} footprint bytes: burst {out['burst']}, countdown {out['countdown']}")
    out["idle"] = _idle(session, sizes)
    log(f"{host.key} footprint idle: {out['idle']}")
    return {"footprint": out}
