"""The scenarios, in the order a column runs them, grouped by the workflow they serve.

Each scenario module has `NAMES` (what `--only` selects, and the keys of the results it returns),
`APP` (the workflow of bench/apps.py its session serves) and `run(session, host, sizes, want)`.
Consecutive scenarios with the same `APP` share one server session (a fresh server and database):
burst and concurrent share one, countdown and growth are one module, recovery has its own. A new
scenario is a module and a line in `SCENARIOS`. (The 1000-output burst of the plain existing host,
ours and the floor runs before the columns, interleaved: bench/scenarios/burst.py `paired`.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from bench.config import Sizes
from bench.hosts.base import Host, Session
from bench.scenarios import burst, concurrent, footprint, live, long, recovery, steps


@dataclass(frozen=True)
class Scenario:
    names: tuple[str, ...]
    app: str
    run: Callable[[Session, Host, Sizes, set[str]], dict[str, Any]]

    @classmethod
    def of(cls, module: ModuleType) -> Scenario:
        return cls(tuple(module.NAMES), str(module.APP), module.run)


SCENARIOS: list[Scenario] = [
    Scenario.of(m) for m in (burst, concurrent, steps, recovery, live, long, footprint)
]
NAMES: tuple[str, ...] = tuple(n for s in SCENARIOS for n in s.names)


def sessions(want: set[str]) -> list[tuple[str, str, list[Scenario]]]:
    """(app, label, the wanted scenarios) per server session, in order; the label names all of the
    session's scenarios, wanted or not (`burst+concurrent`), as in the log."""
    groups: list[tuple[str, list[Scenario]]] = []
    for s in SCENARIOS:
        if groups and groups[-1][0] == s.app:
            groups[-1][1].append(s)
        else:
            groups.append((s.app, [s]))
    out = []
    for app, group in groups:
        wanted = [s for s in group if want & set(s.names)]
        if wanted:
            out.append((app, "+".join(n for s in group for n in s.names), wanted))
    return out
