"""What ran where: the commit measured (and whether `server/` had uncommitted changes), the
machine, the versions of every host. Printed under the table: compare figures only as ratios within
one run, never across machines or runs.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import sqlite3
import subprocess
from pathlib import Path

from bench.config import ROOT
from bench.hosts.base import Host


def git_state() -> str:
    """The commit of the code measured, and whether server/ had uncommitted changes."""
    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "server"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return git.strip() + (" + uncommitted changes in server/" if dirty else "")


def _first(path: str, prefix: str) -> str:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line
    except OSError:
        pass
    return ""


def machine(hosts: list[Host]) -> dict[str, str]:
    mem = _first("/proc/meminfo", "MemTotal")
    mem = f"{int(mem.split()[1]) / 1024 / 1024:.1f} GiB" if mem else ""
    cpu = _first("/proc/cpuinfo", "model name")
    cpu = cpu.split(":", 1)[1].strip() if cpu else ""
    pg = ""
    try:
        pg = subprocess.run(["postgres", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    versions: dict[str, str] = {}
    for h in hosts:
        versions.update(h.versions())
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load average at the end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "os": platform.platform(),
        "python (ours)": platform.python_version(),
        "existing host": versions.get("existing host", ""),
        "framework floor": versions.get("framework floor", ""),
        "sqlite": sqlite3.sqlite_version,
        "postgresql": pg,
        "commit": git_state(),
    }
