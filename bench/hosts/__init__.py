"""The columns of the table, in their order: the framework floor, the plain-HTTP reference, the
existing host, ours.

Each host's module says how it is installed and started: bench/hosts/floor.py (in-process, no
server), bench/hosts/plain_http.py (the framework streamed over uvicorn, nothing stored),
bench/hosts/existing.py (its own venv, bench/hosts/existing_serve.py), bench/hosts/ours.py
(`python -m durable_responses serve`, SQLite or PostgreSQL via bench/hosts/postgres.py). A new host is a
module with a `Host` subclass and a line here.
"""

from __future__ import annotations

from bench.hosts.base import Host, ServerSession, Session
from bench.hosts.existing import existing_hosts
from bench.hosts.floor import floor_hosts
from bench.hosts.ours import ours_hosts
from bench.hosts.plain_http import plain_http_hosts
from durable_responses.store.settings import LEASE_SECONDS

__all__ = ["Host", "ServerSession", "Session", "columns"]


def columns(ours_foreground: bool = False, lease_s: float = LEASE_SECONDS) -> list[Host]:
    return [*floor_hosts(), *plain_http_hosts(), *existing_hosts(), *ours_hosts(ours_foreground, lease_s)]
