"""Which agent-framework-core releases the package is verified against, and the start-up check
that what it relies on is still there (``check_compatibility``)."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from importlib import metadata

from agent_framework import WorkflowAgent, WorkflowCheckpoint, WorkflowEvent
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)
from agent_framework._workflows._typing_utils import is_instance_of, try_coerce_to_type

__all__ = [
    "CONVERT_PARAMETERS",
    "EXTRACT_RESPONSES_PARAMETERS",
    "RUN_CORE_PARAMETERS",
    "VERIFIED_RELEASES",
    "check_compatibility",
    "unverified_release",
]

_log = logging.getLogger("durable_responses.runtime")

# The agent-framework-core releases this module is verified against (pyproject.toml admits the
# range between them; README: supported agent-framework releases).
VERIFIED_RELEASES: tuple[str, ...] = ("1.23.0", "1.26.0")

# The leading parameters of WorkflowAgent._convert_workflow_event_to_agent_response_updates (1.26.0
# adds `role_gate` after them).
CONVERT_PARAMETERS: tuple[str, ...] = ("self", "response_id", "event")

# What the mixin was written against (the same in every verified release).
RUN_CORE_PARAMETERS: tuple[str, ...] = (
    "self",
    "input_messages",
    "checkpoint_id",
    "checkpoint_storage",
    "streaming",
    "tools",
    "function_invocation_kwargs",
    "client_kwargs",
)

# The parameters of WorkflowAgent._extract_function_responses, which converts a call's answers
# into Workflow.run's `responses` (the mixin calls it for the run that restores and delivers).
EXTRACT_RESPONSES_PARAMETERS: tuple[str, ...] = ("self", "input_messages", "pending_requests")

# Keyword arguments the restore phase passes to Workflow.run.
WORKFLOW_RUN_RESTORE_KWARGS: tuple[str, ...] = (
    "stream",
    "checkpoint_id",
    "checkpoint_storage",
    "responses",
    "tools",
    "function_invocation_kwargs",
    "client_kwargs",
)
CHECKPOINT_FIELDS: tuple[str, ...] = (
    "workflow_name",
    "graph_signature_hash",
    "checkpoint_id",
    "previous_checkpoint_id",
    "messages",
    "state",
    "pending_request_info_events",
    "iteration_count",
)


def unverified_release() -> str | None:
    """The installed agent-framework-core release when it is not one of ``VERIFIED_RELEASES``."""
    installed = metadata.version("agent-framework-core")
    return None if installed in VERIFIED_RELEASES else installed


def check_compatibility() -> None:
    """Raise ``RuntimeError`` if agent-framework no longer offers what this module relies on; warn
    (once, at start-up) when the installed release is not one this module was verified against."""
    unverified = unverified_release()
    if unverified is not None:
        _log.warning(
            "agent-framework-core %s is not one of the releases this server is verified against (%s); "
            "it passed the start-up checks, but see README 'Supported agent-framework releases'",
            unverified,
            ", ".join(VERIFIED_RELEASES),
        )
    problems: list[str] = []
    run_core = getattr(WorkflowAgent, "_run_core", None)
    if run_core is None or not inspect.isasyncgenfunction(run_core):
        problems.append("WorkflowAgent._run_core is missing or no longer an async generator")
    else:
        params = tuple(inspect.signature(run_core).parameters)
        if params != RUN_CORE_PARAMETERS:
            problems.append(
                f"WorkflowAgent._run_core parameters are {params}, expected {RUN_CORE_PARAMETERS}"
            )
    convert = getattr(WorkflowAgent, "_convert_workflow_event_to_agent_response_updates", None)
    if convert is None:
        problems.append("WorkflowAgent._convert_workflow_event_to_agent_response_updates is missing")
    else:
        convert_params = tuple(inspect.signature(convert).parameters)
        if convert_params[: len(CONVERT_PARAMETERS)] != CONVERT_PARAMETERS:
            problems.append(
                "WorkflowAgent._convert_workflow_event_to_agent_response_updates parameters are "
                f"{convert_params}, expected {CONVERT_PARAMETERS} first"
            )
    extract = getattr(WorkflowAgent, "_extract_function_responses", None)
    if extract is None:
        problems.append("WorkflowAgent._extract_function_responses is missing")
    elif (extract_params := tuple(inspect.signature(extract).parameters)) != EXTRACT_RESPONSES_PARAMETERS:
        problems.append(
            f"WorkflowAgent._extract_function_responses parameters are {extract_params}, "
            f"expected {EXTRACT_RESPONSES_PARAMETERS}"
        )
    workflow_cls = getattr(WorkflowAgent, "workflow", None)
    if workflow_cls is None:
        problems.append("WorkflowAgent.workflow is missing")
    from agent_framework import Workflow

    run_params = set(inspect.signature(Workflow.run).parameters)
    missing = [name for name in WORKFLOW_RUN_RESTORE_KWARGS if name not in run_params]
    if missing:
        problems.append(f"Workflow.run no longer accepts {missing}")
    if not callable(encode_checkpoint_value) or not callable(decode_checkpoint_value):
        problems.append("checkpoint encoding helpers are missing")
    else:
        decode_params = inspect.signature(decode_checkpoint_value).parameters
        if "allowed_types" not in decode_params:
            problems.append("decode_checkpoint_value no longer takes allowed_types")
    checkpoint_fields = {f.name for f in dataclasses.fields(WorkflowCheckpoint)}
    missing_fields = [name for name in CHECKPOINT_FIELDS if name not in checkpoint_fields]
    if missing_fields:
        problems.append(f"WorkflowCheckpoint lacks fields {missing_fields}")
    coerce_params = tuple(inspect.signature(try_coerce_to_type).parameters)
    if coerce_params[:2] != ("data", "target_type") or not callable(is_instance_of):
        problems.append("_typing_utils.try_coerce_to_type / is_instance_of changed")
    if getattr(WorkflowEvent, "response_type", None) is None:
        problems.append("WorkflowEvent.response_type is missing")
    if getattr(WorkflowAgent, "REQUEST_INFO_FUNCTION_NAME", None) != "request_info":
        problems.append("WorkflowAgent.REQUEST_INFO_FUNCTION_NAME is no longer 'request_info'")
    if problems:
        raise RuntimeError(
            "The installed agent-framework (agent-framework-core "
            f"{metadata.version('agent-framework-core')}) is not one server/runtime/_af_private/ "
            f"was written against (agent-framework-core {', '.join(VERIFIED_RELEASES)}): "
            + "; ".join(problems)
            + ". Re-verify the restore bug (module docstring) and update the module before running this host."
        )
