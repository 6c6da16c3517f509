"""Several apps on one server: each app's lane (its continuations and its launcher), picked by
the request's `model` and, for a stored response, by the app it recorded.

Invariants:
- One app: every request goes to it whatever its `model` (as a single-app server always did),
  and every stored response is its own.
- Several apps: `model` names the app (an unknown one is a 400 listing the known ones); a
  response records its app's name, and recovery resumes it with that app, or leaves it to a
  replica that serves it (`Lanes.names` filters the claims).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...protocol import errors
from ...store import Runnable
from ..run.launcher import Launcher
from ..turns.continuation import Continuations
from .apps import HostedApp


@dataclass(frozen=True)
class Lane:
    """One hosted app and the collaborators that run its responses; `version` is the app
    version it records, `compatible` every version whose responses it runs (its own first)."""

    name: str
    app: HostedApp
    continuations: Continuations
    launcher: Launcher
    version: str = ""
    compatible: tuple[str, ...] = ()
    manifest: Mapping[str, Any] = field(default_factory=dict)


class Lanes:
    def __init__(self, lanes: Sequence[Lane]) -> None:
        if not lanes:
            raise ValueError("at least one app is hosted")
        self._by_name = {lane.name: lane for lane in lanes}
        self.default = lanes[0]

    @property
    def several(self) -> bool:
        return len(self._by_name) > 1

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def __iter__(self) -> Iterator[Lane]:
        return iter(self._by_name.values())

    def pick(self, model: str | None) -> Lane:
        """The lane a request's `model` names (one app: that app, whatever the model)."""
        if not self.several:
            return self.default
        lane = self._by_name.get(model or "")
        if lane is None:
            known = ", ".join(f"'{n}'" for n in self._by_name)
            shown = f"'{model[:128]}'" if model else "no model"
            raise errors.bad_request(
                f"This server hosts several apps and {shown} is none of them; set model to one of {known} "
                "(GET /v1/models lists them).",
                param="model",
                code="model_not_found",
            )
        return lane

    @property
    def runnable(self) -> Runnable:
        """The stored responses this server can run: its apps' responses of compatible versions."""
        return Runnable({lane.name: lane.compatible for lane in self}, by_app=self.several)

    def of_response(self, app: str | None) -> Lane | None:
        """The lane of a stored response that recorded `app` (one app: always that app)."""
        if not self.several:
            return self.default
        return self._by_name.get(app or "")
