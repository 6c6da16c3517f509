"""Who else is alive on an SQLite file: a lock file beside the database, held for a store's life.

Job: on the embedded SQLite default, a process that restarts after a crash should not wait a
full lease before resuming its predecessor's responses: nobody else can be running them. Every
store on a file holds a shared `flock` on `<database>.lock` for its life; at start it first
tries an exclusive one, without waiting. Getting it proves that no other store (no other
process, no other store in this process) has the file open, so every lease of another owner is
dead and may be expired at once. Then it keeps a shared lock, so that later arrivals know it is
alive (`serve --workers`: several processes on one file, each with its shared lock).

Invariant: the proof is only used while the exclusive lock is held (`Store.start` expires the
dead leases before it converts to shared): nobody can have taken a lease in between.
Where locks cannot be taken (no such file system support, a read-only directory), nothing is
proven and leases expire as usual.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os

log = logging.getLogger("durable_responses.store")


class LockFile:
    def __init__(self, database_path: str) -> None:
        self.path = f"{database_path}.lock"
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; True when this store is alone on the file (an exclusive lock)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            log.info("store: no lock file %s (%s): a restart waits for leases to expire", self.path, exc)
            return False
        self._fd = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # others are alive: `share()` next
        except OSError as exc:
            log.info("store: cannot lock %s (%s): a restart waits for leases to expire", self.path, exc)
            return False
        return True

    def share(self) -> bool:
        """Hold a shared lock from now on (others may join, and see that this store is alive);
        False while another store holds the exclusive one (it is starting: try again shortly;
        never blocks, so a store in this process that holds it is not kept from finishing)."""
        if self._fd is None:
            return True
        try:
            fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError:
            return True  # no locks here: nothing to prove either way
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # closing the descriptor drops its lock
            self._fd = None
