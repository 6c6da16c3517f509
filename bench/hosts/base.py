"""What every host offers the scenarios: a column of the table that can serve a bench workflow.

A `Host` is one column (a host in one configuration). `session(app, name)` serves one workflow of
bench/apps.py for a group of scenarios and yields a `Session`, which hands out `Driver`s (the
scenarios' only way to run responses) and, for a real server, can be killed and started again on
the same state (the recovery scenario). Adding a host is a new module with a `Host` subclass and a
line in bench/hosts/__init__.py.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.config import Sizes
from bench.stream import Driver


class Session(Protocol):
    """One workflow being served (a server process, or the in-process framework)."""

    def driver(self, *, connections: int = 10, timeout: float = 300, measure_cpu: bool = False) -> Driver:
        """A client of this session; with `measure_cpu`, its streams record the host's CPU."""
        ...


class ServerSession(Session, Protocol):
    """A session served by a real process over HTTP."""

    @property
    def base_url(self) -> str: ...

    @property
    def pid(self) -> int:
        """The server's process (the supervisor of `--workers`)."""
        ...

    def kill(self) -> None:
        """`kill -9` the server."""
        ...

    def start(self) -> Any:
        """Start it again: same port, same database or state directory."""
        ...


# Scenarios of ours alone: replays of the event log and what a response leaves in the database.
OURS_ONLY = ("long", "footprint")


@dataclass
class Host:
    """One column of the table."""

    key: str
    label: str
    kind: str  # "floor" | "existing" | "ours"
    # Extra fields of every POST /responses body for this column.
    body: dict[str, Any] = field(default_factory=dict)
    resilient: bool = False
    dialect: str = ""
    delivery: str = ""
    # Where its sessions keep their state (set by `prepare`).
    work: Path = field(default_factory=Path, repr=False)
    # The scenarios this column runs (None: every one); the `--workers 2` column runs `capacity` only.
    only: tuple[str, ...] | None = None

    @property
    def tags(self) -> set[str]:
        """What `--only` selects this column by."""
        return {self.key, self.kind}

    def rounds(self, sizes: Sizes) -> int:
        """Rounds of the superstep pairs (the fast hosts repeat theirs: see `Sizes.ours_reps_factor`)."""
        return 1

    @property
    def recovery_skip(self) -> str | None:
        """Why the recovery scenario does not apply to this host, if it does not."""
        return None

    def skip(self, scenario: str) -> str | None:
        """Why this column does not run `scenario` (a name of `NAMES`), if it does not."""
        if self.only is not None and scenario not in self.only:
            return "not run for this column"
        if scenario in OURS_ONLY and self.kind != "ours":
            return "ours only"
        return self.recovery_skip if scenario == "recovery" else None

    def prepare(self, work: Path) -> None:
        """Install what the host needs and note where its sessions keep their state."""
        self.work = work / self.key

    def session(self, app: str, name: str) -> AbstractContextManager[Session]:
        raise NotImplementedError

    def versions(self) -> dict[str, str]:
        """Lines for the report's "Machine:" paragraph."""
        return {}
