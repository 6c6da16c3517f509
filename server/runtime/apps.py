"""Loading the hosted app (`--app MODULE:ATTR`) and building a fresh agent for every run.

Invariant: every run and every recovery gets a freshly built agent (a `Workflow` instance runs
one run at a time), and a workflow agent is always made restorable (see `_af_private`) without
changing the class the app chose, so the app's own `run()` override stays the entry point.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from typing import Any

from agent_framework import Workflow, WorkflowAgent, WorkflowBuilder

from ._af_private import make_restorable

DEFAULT_APP = "durable_responses.examples.echo:echo"


class AppError(Exception):
    """The `--app` target cannot be loaded or does not build an agent or a workflow."""


class HostedApp:
    def __init__(self, spec: str, factory: Callable[[], Any]) -> None:
        self.spec = spec
        self._factory = factory
        probe = self._build_raw()
        self.is_workflow = isinstance(probe, WorkflowAgent)
        self.name = getattr(probe, "name", None) or spec

    @classmethod
    def load(cls, spec: str | None) -> HostedApp:
        spec = spec or DEFAULT_APP
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            raise AppError(f"--app must look like MODULE:ATTR (for example my_app:build), got {spec!r}")
        if "" not in sys.path and "." not in sys.path:
            sys.path.insert(0, "")  # like `python -m`: the working directory's modules are importable
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise AppError(f"cannot import {module_name!r} for --app {spec}: {exc}") from exc
        target: Any = module
        for part in attr.split("."):
            if not hasattr(target, part):
                raise AppError(f"{module_name!r} has no attribute {attr!r} (--app {spec})")
            target = getattr(target, part)
        return cls(spec, _as_factory(target, spec))

    def _build_raw(self) -> Any:
        try:
            built = self._factory()
        except Exception as exc:
            raise AppError(f"the app factory {self.spec} raised {type(exc).__name__}: {exc}") from exc
        if isinstance(built, WorkflowBuilder):
            built = built.build()
        if isinstance(built, Workflow):
            built = built.as_agent(name=built.name or "workflow")
        if not hasattr(built, "run") or not callable(built.run):
            raise AppError(
                f"the app factory {self.spec} returned {type(built).__name__}; it must return a Workflow, "
                "WorkflowBuilder, WorkflowAgent or an agent with a run() method"
            )
        return built

    def build(self) -> Any:
        """A fresh agent for one run (workflow agents made restorable)."""
        agent = self._build_raw()
        if isinstance(agent, WorkflowAgent):
            make_restorable(agent)
        return agent


def _as_factory(target: Any, spec: str) -> Callable[[], Any]:
    if isinstance(target, WorkflowBuilder):
        return target.build
    if isinstance(target, Workflow | WorkflowAgent):
        raise AppError(
            f"--app {spec} names a {type(target).__name__} instance; name a zero-argument function that "
            "builds one instead (a workflow runs one run at a time, so the host builds one per run)"
        )
    if not callable(target):
        raise AppError(f"--app {spec} is not callable; name a zero-argument factory")
    if inspect.isclass(target) or inspect.isfunction(target) or inspect.ismethod(target):
        try:
            inspect.signature(target).bind()
        except TypeError as exc:
            raise AppError(f"--app {spec} must take no arguments: {exc}") from exc
        except ValueError:
            pass
    factory: Callable[[], Any] = target
    return factory
