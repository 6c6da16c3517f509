"""Loading the hosted app (`--app MODULE:ATTR`) and building a fresh agent for every run.

Invariant: every run and every recovery gets a freshly built agent (a `Workflow` instance runs
one run at a time), and a workflow agent is always made restorable (see `_af_private`) without
changing the class the app chose, so the app's own `run()` override stays the entry point.

What the app takes (`HostedApp.input`): messages, or the typed input its workflow's start executor
declares (`inputs`); a workflow whose start executor does not take messages is hosted through a
`WorkflowAgent` that builds that input from the request (`_af_private.typed_workflow_agent`).
The types the app's workflow declares (its executors' inputs and outputs, the request and response
types of its `request_info` handlers, its agent executors' `response_format`, the classes they
hold) are admitted to the checkpoint allow-list (`checkpoint_types`); no other class is.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import sys
import typing
from collections.abc import Callable, Iterable
from typing import Any

from agent_framework import (
    AgentExecutor,
    FunctionalWorkflow,
    FunctionalWorkflowAgent,
    FunctionalWorkflowDefinition,
    StepWrapper,
    Workflow,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowExecutor,
)

from .._af_private import (
    declared_request_types,
    dispatchable,
    functional_workflow_of,
    generated_name,
    make_restorable,
    typed_workflow_agent,
)
from .functional import FunctionalAgent, fresh_functional, functional_input
from .inputs import InputSpec, spec_for_types
from .run_options import HOST_CHECKPOINT_TYPES, AppReach, Reach, reach_of

DEFAULT_APP = "durable_responses.examples.echo:echo"

# Modules whose classes the framework's checkpoint allow-list admits already (or that are no
# application's own): never listed as the app's types.
_ADMITTED_MODULES = ("builtins", "typing", "types", "collections", "datetime", "uuid", "decimal", "abc")
_ADMITTED_PREFIXES = ("agent_framework.", "agent_framework_orchestrations.", "openai.types.", "pydantic")


class AppError(Exception):
    """The `--app` target cannot be loaded or does not build an agent or a workflow."""


class HostedApp:
    def __init__(self, spec: str, factory: Callable[[], Any]) -> None:
        self.spec = spec
        self._factory = factory
        self.input = InputSpec()
        # The input spec checked at the first build, by what the entry declares: later builds
        # (one per run) reuse it instead of building its validators again.
        self._checked: dict[Any, InputSpec] = {}
        self.kind = "agent"
        probe = self._build_raw()
        # The one agent start-up builds (never run: every run builds its own, `build`): what the
        # version manifest (`versions.manifest_of`) and the journal's start-up check read the
        # app's shape from, so a server's start builds each app once.
        self.probe: Any = probe
        self.is_workflow = isinstance(probe, WorkflowAgent | FunctionalAgent)
        if isinstance(probe, WorkflowAgent):
            self.kind = "workflow"
        elif isinstance(probe, FunctionalAgent):
            self.kind = "functional_workflow"
        # Recorded with each response and shown (`/v1/models`, `mcp_call.server_label`, metrics):
        # the same in every process, so not the name an unnamed `WorkflowBuilder` makes up.
        name = getattr(probe, "name", None)
        self.name: str = spec if not name or generated_name(name) else str(name)
        # What of a request's options can reach the app's model calls (`run_options`).
        self.reach: AppReach = reach_of(probe)
        workflow = getattr(probe, "workflow", None)
        try:
            if isinstance(workflow, Workflow):
                declared = declared_types(workflow)
            elif isinstance(workflow, FunctionalWorkflow):
                declared = functional_types(workflow)
            else:
                declared = set()
        except Exception as exc:
            raise AppError(
                f"the types the workflow built by {spec} declares cannot be read "
                f"({type(exc).__name__}: {exc}); check its handlers' annotations"
            ) from exc
        if self.reach.kind == Reach.WORKFLOW:
            # The request options a workflow's run kwargs carry (`run_options`).
            declared |= set(HOST_CHECKPOINT_TYPES)
        self.checkpoint_types: tuple[str, ...] = tuple(sorted(declared))

    @property
    def typed_input(self) -> bool:
        """Whether a new turn starts a new run (a typed input, or a functional workflow) instead
        of sending messages to the state the last turn left; a pause is continued either way."""
        return self.is_workflow and (
            self.input.typed or self.input.single_message or self.kind == "functional_workflow"
        )

    def describe(self) -> dict[str, Any]:
        """What a client needs to call the app: its kind and the JSON schema of its input."""
        return {
            "kind": self.kind,
            "input": "typed" if self.input.typed else "messages",
            "input_schema": self.input.schema(),
        }

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
        except Exception as exc:
            raise AppError(
                f"importing {module_name!r} for --app {spec} raised {type(exc).__name__}: {exc}; "
                "fix the module so it imports cleanly"
            ) from exc
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
        try:
            if isinstance(built, WorkflowBuilder):
                built = built.build()
            if isinstance(built, Workflow):
                built = self._workflow_agent(built)
            if isinstance(built, FunctionalWorkflowDefinition):
                built = built.build()
            if isinstance(built, FunctionalWorkflowAgent):
                built = functional_workflow_of(built)
            if isinstance(built, FunctionalWorkflow):
                built = self._functional_agent(built)
        except AppError:
            raise
        except Exception as exc:
            raise AppError(
                f"the workflow built by {self.spec} cannot be hosted: {type(exc).__name__}: {exc}"
            ) from exc
        if not hasattr(built, "run") or not callable(built.run):
            raise AppError(
                f"the app factory {self.spec} returned {type(built).__name__}; it must return a Workflow, "
                "WorkflowBuilder, WorkflowAgent, a functional @workflow or an agent with a run() method"
            )
        return built

    def _workflow_agent(self, workflow: Workflow) -> WorkflowAgent:
        name = workflow.name or "workflow"
        try:
            return workflow.as_agent(name=name)
        except ValueError:
            # The start executor does not take messages: its own input type(s), built from the
            # request's text.
            pass
        key = ("graph", tuple(workflow.input_types))
        checked = self._checked.get(key)
        if checked is not None:
            return typed_workflow_agent(workflow, checked.convert, name=name)
        spec = spec_for_types(workflow.input_types)
        if not spec.typed and not spec.single_message:
            raise AppError(
                f"the workflow built by {self.spec} starts with an executor that takes "
                f"{workflow.input_types!r}, which the host cannot build from a request"
            )
        try:
            spec.schema()
            spec.adapters()
        except Exception as exc:
            raise AppError(
                f"the workflow built by {self.spec} takes {spec.describe()}, which cannot be built from "
                f"JSON ({type(exc).__name__}: {exc}); take a str, a number, a dataclass, a pydantic "
                "model or a TypedDict instead"
            ) from exc
        for t in spec.types:
            if typing.is_typeddict(t) and not dispatchable({}, t):
                raise AppError(
                    f"the workflow built by {self.spec} starts with an executor that takes the TypedDict "
                    f"{t.__name__}, which this agent-framework cannot route a message to (isinstance "
                    "refuses a TypedDict); take a dataclass or a pydantic model instead"
                )
        self.input = self._checked[key] = spec
        return typed_workflow_agent(workflow, spec.convert, name=name)

    def _functional_agent(self, built: FunctionalWorkflow) -> FunctionalAgent:
        fresh = fresh_functional(built)  # even if the factory hands out one instance: one per run
        key = ("functional", getattr(fresh, "__wrapped__", None))
        checked = self._checked.get(key)
        if checked is not None:
            return FunctionalAgent(fresh, checked, name=fresh.name)
        spec = functional_input(fresh)
        if not spec.typed and not spec.single_message and spec != InputSpec():
            raise AppError(f"the functional workflow {self.spec} takes an input the host cannot build")
        try:
            spec.schema()
            spec.adapters()
        except Exception as exc:
            raise AppError(
                f"the functional workflow {self.spec} takes {spec.describe()}, which cannot be built from "
                f"JSON ({type(exc).__name__}: {exc}); take a str, a number, a dataclass or a pydantic "
                "model instead"
            ) from exc
        self.input = self._checked[key] = spec
        return FunctionalAgent(fresh, spec, name=fresh.name)

    def build(self) -> Any:
        """A fresh agent for one run (workflow agents made restorable)."""
        agent = self._build_raw()
        if isinstance(agent, WorkflowAgent):
            make_restorable(agent)
        return agent


def _annotations_of(func: Any) -> list[Any]:
    try:
        return list(typing.get_type_hints(func).values())
    except Exception:
        return []


def functional_types(workflow: FunctionalWorkflow) -> set[str]:
    """`module:qualname` of the application classes a functional workflow declares: its function's
    parameter and return annotations and those of the `@step`s it names (their results are cached
    in its checkpoints)."""
    func = getattr(workflow, "__wrapped__", None)
    if not callable(func):
        return set()
    annotations = _annotations_of(func)
    code = getattr(func, "__code__", None)
    scope = getattr(func, "__globals__", {})
    for name in getattr(code, "co_names", ()):
        step = scope.get(name)
        if isinstance(step, StepWrapper):
            annotations += _annotations_of(getattr(step, "__wrapped__", None))
    found: set[str] = set()
    classes: set[int] = set()
    for annotation in annotations:
        for cls in _classes_in(annotation, classes):
            key = _type_key(cls)
            if key is not None and not inspect.isabstract(cls) and cls is not type(None):
                found.add(key)
    return found


def load_apps(spec: str | None) -> list[tuple[str, HostedApp]]:
    """The apps of `--app` / `DURABLE_RESPONSES_APP`: comma-separated `MODULE:ATTR` or
    `NAME=MODULE:ATTR` entries, each with the name requests pick it by (`model`); an entry
    without a name is called by its agent's or workflow's name."""
    entries = [e.strip() for e in (spec or DEFAULT_APP).split(",") if e.strip()] or [DEFAULT_APP]
    apps: list[tuple[str, HostedApp]] = []
    for entry in entries:
        name, sep, target = entry.partition("=")
        if not sep:
            name, target = "", entry
        name = name.strip()
        if sep and (not name or any(ch.isspace() for ch in name)):
            raise AppError(f"--app {entry!r}: the name before '=' must be a word without spaces")
        app = HostedApp.load(target.strip())
        apps.append((name or str(app.name), app))
    seen: set[str] = set()
    for name, _ in apps:
        if name in seen:
            raise AppError(
                f"two apps are called {name!r}; name each with --app NAME=MODULE:ATTR (for example "
                f"--app {name}2=...)"
            )
        seen.add(name)
    return apps


def _type_key(t: type) -> str | None:
    module = getattr(t, "__module__", "") or ""
    if module in _ADMITTED_MODULES or module.startswith(_ADMITTED_PREFIXES):
        return None
    return f"{module}:{t.__qualname__}"


def _classes_in(t: Any, seen: set[int], depth: int = 0) -> Iterable[type]:
    """The classes a declared type annotation can put into a checkpoint: itself, its generic
    arguments, and (for dataclasses, pydantic models and TypedDicts) its fields' types."""
    if depth > 6 or id(t) in seen:
        return
    seen.add(id(t))
    for arg in typing.get_args(t):
        yield from _classes_in(arg, seen, depth + 1)
    if not isinstance(t, type):
        return
    if not typing.is_typeddict(t):
        yield t
    if dataclasses.is_dataclass(t) or typing.is_typeddict(t) or hasattr(t, "model_fields"):
        try:
            hints = typing.get_type_hints(t)
        except Exception:
            hints = {}
        for hint in hints.values():
            yield from _classes_in(hint, seen, depth + 1)
    if isinstance(t, enum.EnumMeta):
        return


def declared_types(workflow: Workflow, seen: set[int] | None = None) -> set[str]:
    """`module:qualname` of every application class the workflow's graph declares (see module doc)."""
    seen = set() if seen is None else seen
    found: set[str] = set()
    annotations: list[Any] = []
    for executor in workflow.executors.values():
        annotations += [*executor.input_types, *executor.output_types, *executor.workflow_output_types]
        annotations += declared_request_types(executor)
        if isinstance(executor, AgentExecutor):
            annotations += _response_format(executor.agent)
        if isinstance(executor, WorkflowExecutor) and id(executor.workflow) not in seen:
            seen.add(id(executor.workflow))
            found |= declared_types(executor.workflow, seen)
    classes: set[int] = set()
    for annotation in annotations:
        for cls in _classes_in(annotation, classes):
            key = _type_key(cls)
            if key is not None and not inspect.isabstract(cls):
                found.add(key)
    return found


def _response_format(agent: Any) -> list[Any]:
    """The structured-output class an agent executor's agent declares (`default_options`'
    `response_format`): its replies' parsed `value`, which the `AgentResponse` the executor sends
    on carries into the checkpoints that follow."""
    options = getattr(agent, "default_options", None)
    fmt = options.get("response_format") if isinstance(options, dict) else None
    return [fmt] if isinstance(fmt, type) else []


def _as_factory(target: Any, spec: str) -> Callable[[], Any]:
    if isinstance(target, WorkflowBuilder | FunctionalWorkflowDefinition):
        return target.build
    if isinstance(target, FunctionalWorkflow | FunctionalWorkflowAgent):
        # The host builds a fresh instance of its function for every run (`_functional_agent`).
        return lambda: target
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
