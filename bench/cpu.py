"""CPU time read from /proc: what a host's processes spent, and what other processes spent meanwhile.

- `ProcessCPU`: the CPU seconds of one server's process tree and, for PostgreSQL, of the backends
  serving its database (found by their process title, which names the database), so a host's CPU
  per output counts the database work it causes. PostgreSQL's shared processes (walwriter,
  checkpointer) serve every database on the machine and are not counted. The set of processes is
  found once (`refresh`, a scan of /proc: milliseconds, done outside any timed window); each read
  after that opens only those processes' stat files.
- `OtherLoad`: the machine is shared (two cores, other engineers' test runs); the run notes under the
  table when processes that are neither the benchmark's nor PostgreSQL's used more than 5% of a CPU
  during a column (the machine's busy time less ours).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, str, float] | None:
    """(ppid, command name, CPU seconds incl. reaped children) of one process, or None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), comm, sum(int(x) for x in fields[11:15]) / _TICK


def cpu_by_pid() -> dict[int, tuple[int, str, float]]:
    """pid -> (ppid, command name, CPU seconds incl. reaped children) from /proc."""
    out: dict[int, tuple[int, str, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                out[int(entry)] = st
    return out


def descendants(roots: set[int], table: dict[int, tuple[int, str, float]]) -> set[int]:
    mine = set(roots)
    changed = True
    while changed:
        changed = False
        for pid, (ppid, _, _) in table.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                changed = True
    return mine


def postgres_backends(database: str) -> set[int]:
    """Pids of the PostgreSQL backends connected to `database` ("postgres: ... user db host(port) ...")."""
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            title = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if title.startswith("postgres:") and f" {database} " in title:
            out.add(int(entry))
    return out


class ProcessCPU:
    """CPU seconds of a server's process tree (and its PostgreSQL database's backends)."""

    def __init__(self, pid: int, database: str | None = None) -> None:
        self.pid = pid
        self.database = database
        self.pids: set[int] = {pid}
        # CPU of processes seen once and gone since (a backend closed by the pool).
        self._gone = 0.0
        self._last: dict[int, float] = {}

    def refresh(self) -> None:
        self.pids = descendants({self.pid}, cpu_by_pid())
        if self.database:
            self.pids |= postgres_backends(self.database)

    def seconds(self) -> float:
        for pid in list(self.pids):
            st = _stat(pid)
            if st is None:
                self._gone += self._last.pop(pid, 0.0)
                self.pids.discard(pid)
            else:
                self._last[pid] = st[2]
        return self._gone + sum(self._last.values())


def run_seconds(pids: set[int]) -> float:
    """CPU seconds the threads of `pids` have run so far, to the nanosecond: the scheduler's own
    count (/proc/<pid>/task/<tid>/schedstat). `/proc/<pid>/stat` counts in ticks of 10 ms, too
    coarse for a difference of a few milliseconds (a 1,000-event replay). Threads that exited
    are not counted (nor are processes that are gone)."""
    total = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total / 1e9


def busy_seconds() -> float:
    """CPU seconds the machine's processes have run (all cores; /proc/stat user, nice and system).

    Interrupt time is left out (loopback traffic, ours included, is processed there, charged to no
    process), and so is steal (other virtual machines).
    """
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system = (int(x) for x in fields[:3])
    return (user + nice + system) / _TICK


class OtherLoad:
    """CPU seconds used during a window by processes that are not this benchmark's (nor PostgreSQL's).

    The total is the machine's busy time (/proc/stat) less what the benchmark's process tree and
    PostgreSQL's processes used (their own time, and their reaped children's: a server that exited
    is counted in the benchmark's). Per-process counts with reaped children's time over-count
    others: a shell whose long-running child exits inherits that child's whole life, so one
    showed 414 CPU-s in 50 s on two cores; the top names are from own time only.
    """

    def __init__(self) -> None:
        self.before = cpu_by_pid()
        self.own_before = _own_cpu()
        self.busy0 = busy_seconds()
        self.t0 = time.monotonic()

    def done(self) -> dict[str, Any]:
        busy = busy_seconds() - self.busy0
        after = cpu_by_pid()
        mine = descendants({os.getpid()}, after)
        ours = 0.0
        for pid, (_, comm, cpu) in after.items():
            if pid in mine or comm.startswith("postgres"):
                ours += cpu - (self.before[pid][2] if pid in self.before else 0.0)
        own_after = _own_cpu()
        other: dict[str, float] = {}
        for pid, (_, comm, _cpu) in after.items():
            if pid in mine or comm.startswith("postgres") or pid not in own_after:
                continue
            used = own_after[pid] - self.own_before.get(pid, 0.0)
            if used > 0.05:
                other[comm] = other.get(comm, 0.0) + used
        return {
            "wall_s": time.monotonic() - self.t0,
            "other_cpu_s": max(0.0, busy - ours),
            "top": sorted(other.items(), key=lambda kv: -kv[1])[:3],
        }


def _own_cpu() -> dict[int, float]:
    """pid -> CPU seconds of the process itself (utime + stime, no reaped children)."""
    out: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        out[int(entry)] = (int(fields[11]) + int(fields[12])) / _TICK
    return out
