"""What the framework does with a workflow's types, asked of the framework itself: a reply
coerced as ``Workflow.run(responses=...)`` will, whether a value can be routed to a declared
input, the request types an executor's ``@response_handler``s declare, the workflow a
``FunctionalWorkflowAgent`` wraps, whether a workflow's name is one the builder made up.

Private names: ``agent_framework._workflows._typing_utils.try_coerce_to_type`` /
``is_instance_of``, ``Executor._response_handler_specs``, ``FunctionalWorkflowAgent._workflow``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agent_framework import Executor

# The coercion ``Workflow.run(responses=...)`` applies to a reply before checking its type.
from agent_framework._workflows._typing_utils import is_instance_of, try_coerce_to_type

__all__ = [
    "coerce_request_response",
    "declared_request_types",
    "dispatchable",
    "functional_workflow_of",
    "generated_name",
]

# The name ``WorkflowBuilder`` gives a workflow built without one: new per builder (a uuid4).
_GENERATED_NAME = re.compile(r"WorkflowBuilder-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def generated_name(name: str | None) -> bool:
    """Whether ``name`` is the one ``WorkflowBuilder`` made up for an unnamed workflow (its
    ``as_agent()`` takes it too): another in every process, so no name to record or show."""
    return name is not None and _GENERATED_NAME.fullmatch(name) is not None


def functional_workflow_of(agent: Any) -> Any:
    """The ``FunctionalWorkflow`` a ``FunctionalWorkflowAgent`` (``.build().as_agent()``) wraps:
    in 1.23.0 only its private ``_workflow`` holds it."""
    workflow = getattr(agent, "_workflow", None)
    if workflow is None:
        raise TypeError("this FunctionalWorkflowAgent does not hold its workflow as _workflow")
    return workflow


def dispatchable(value: Any, declared: Any) -> bool:
    """Whether the framework can route ``value`` to a handler declared for ``declared`` (its
    ``is_instance_of``; in 1.23.0 a ``TypedDict`` cannot be: ``isinstance`` refuses it)."""
    try:
        return bool(is_instance_of(value, declared))
    except TypeError:
        return False


def declared_request_types(executor: Executor) -> list[Any]:
    """The request and response types of ``executor``'s ``@response_handler``s (what its
    ``ctx.request_info`` calls send and take). In 1.23.0 they are known only from the private
    ``_response_handler_specs`` the executor builds at construction."""
    found: list[Any] = []
    for spec in getattr(executor, "_response_handler_specs", None) or ():
        for key in ("request_type", "response_type"):
            if isinstance(spec, Mapping) and spec.get(key) is not None:
                found.append(spec[key])
    return found


def coerce_request_response(value: Any, response_type: Any) -> Any:
    """``value`` (a decoded JSON value) as an instance of ``response_type``, converted exactly as
    ``Workflow.run(responses=...)`` converts a reply (dict -> dataclass / pydantic model /
    ``from_dict``, int -> float, typed lists, dicts, tuples, sets and unions).

    Raises:
        TypeError: ``value`` cannot become a ``response_type``; the message says why when known.
    """
    if isinstance(value, bool) and response_type in (int, float):
        raise TypeError("a boolean is not a number")
    coerced = try_coerce_to_type(value, response_type)
    try:
        ok = is_instance_of(coerced, response_type)
    except TypeError:  # an annotation isinstance cannot check: the framework cannot either
        ok = True
    if ok:
        return coerced
    detail = ""
    model_validate = getattr(response_type, "model_validate", None)
    if isinstance(value, dict) and callable(model_validate):
        try:
            model_validate(value)
        except Exception as exc:  # pydantic's ValidationError names the failing fields
            detail = " ".join(str(exc).split())
    raise TypeError(detail)
