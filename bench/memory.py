"""Resident memory of a server, read from /proc: now, and the peak over a window (sampled).

Why sampled: VmHWM is the process's lifetime peak (set by whatever ran before the window); a
thread reading VmRSS every few milliseconds sees the window's own peak, to within the interval.
A server's process tree is summed (the workers of `--workers`); PostgreSQL's backends are not.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType

from bench.cpu import cpu_by_pid, descendants


def rss_bytes(pid: int) -> int:
    """Resident bytes of `pid` and its descendants."""
    total = 0
    for p in descendants({pid}, cpu_by_pid()):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
                    break
        except OSError:
            continue
    return total


def _rss_one(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakRSS:
    """`with PeakRSS(pid) as p: ...` then `p.before`, `p.peak` (bytes; one process)."""

    def __init__(self, pid: int, interval_s: float = 0.005) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.before = 0
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_one(self.pid))
            time.sleep(self.interval_s)

    def __enter__(self) -> PeakRSS:
        self.before = self.peak = _rss_one(self.pid)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_one(self.pid))
