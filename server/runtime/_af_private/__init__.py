"""The one package that touches private agent-framework names, and the restore fix that needs them.

Job: make a ``WorkflowAgent`` resumable through its public ``run()`` (``restore``, ``forwarding``),
pace a workflow's events (``pacing``), (de)serialize checkpoints with the framework's own encoding
(``checkpoints``), convert a reply to a pending request the way the framework will and read the
types a workflow declares (``workflow_types``), quiet repeated build warnings (``build_warnings``),
and check the installed release at start-up (``compat``). Reading requests out of checkpoints needs
no private name (``pending.py``). The rest of the server imports from this package only.

Invariant: no other module of the server imports a private agent-framework name (a test reads every
module's imports). Everything here is
verified against each supported agent-framework-core release (``VERIFIED_RELEASES``: the oldest and
the newest, 1.23.0 and 1.26.0, on which CI runs the suite); ``check_compatibility()`` (called at host
start-up) and ``tests/runtime/test_af_private.py`` (which pins each release's sources) fail loudly
when a release changes what this relies on. Where the releases differ, the host takes one behaviour
on all of them (the forwarding of what an agent inside a workflow streams, below).

The framework's restore bug
---------------------------
``WorkflowAgent._run_core`` (``_workflows/_agent.py``) restores a checkpoint by running
``workflow.run(checkpoint_id=...)`` and DISCARDING every event; without new input it then returns.
So on a fresh instance ``agent.run(checkpoint_id=C)`` yields nothing even though the workflow drained
the checkpoint's queued work (a countdown restored mid-way silently finishes). With new input, the
restored work's outputs are lost and only the new input's appear. It also omits
``function_invocation_kwargs`` / ``client_kwargs`` from the restore call. No public hook recovers
those events (``WorkflowAgent`` never runs agent middleware, context providers see an empty response,
there are no workflow event observers), and the host must go through the application's own
``agent.run()`` (never around it) so a subclass that overrides ``run()`` sees recovery.

Private names used, and why
---------------------------
- ``WorkflowAgent._run_core``: overridden by ``_RestoreForwardingMixin`` (signature pinned) so the
  restore phase's events are yielded; the input phase is delegated to the original with
  ``checkpoint_id=None``. The mixin is combined with the application's own class by
  ``make_restorable`` (``__class__`` rebinding), so an overridden ``run()`` stays the entry point.
  After the workflow's last event it awaits the host's ``on_events_end`` hook, before the
  framework's stream builds its final response from every update.
- ``WorkflowAgent._extract_function_responses``: how the original turns a call's answers (function
  results, approval responses) into ``Workflow.run``'s ``responses`` for the pending requests. A
  call that only answers a checkpoint's pending requests is converted with it and restored and
  delivered in ONE ``Workflow.run(checkpoint_id=..., responses=...)``: restoring alone runs a
  superstep that counts against the workflow's ``max_iterations`` (the framework resumes a pause in
  one run, and so does the host).
- ``WorkflowAgent._convert_workflow_event_to_agent_response_updates``: overridden by the mixin so
  an output that is an agent's reply (update, response, message, list of messages) is forwarded
  with every content, as 1.23.0 does (``forwarding.forwarded``); 1.26.0 drops tool calls, approval responses
  and tool results there, and the host shows the tools an agent inside a workflow runs. Its other
  events go to the framework's own conversion (1.26.0 adds a ``role_gate`` parameter).
  ``agent_framework._types._copy_operation_state`` copies a response's operation state as both do.
- ``agent_framework._workflows._typing_utils.try_coerce_to_type`` / ``is_instance_of``: what
  ``Workflow.run(responses=...)`` does to a reply (``_coerce_request_info_response``) before it
  refuses a wrong type at run time; ``coerce_request_response`` applies the same up front, so a reply
  the host accepts is one the framework accepts.
- ``Workflow._runner_context`` (the framework's own ``WorkflowAgent`` reads it too): ``pace_events``
  wraps that instance's ``add_event``, through which every event of an executor reaches the stream.
- ``WorkflowAgent._workflow``: ``_TypedInputWorkflowAgent`` sets it itself instead of calling
  ``WorkflowAgent.__init__``, which refuses a workflow whose start executor does not take
  messages; its input phase sends the typed input the host built (``typed_workflow_agent``).
- ``Executor._response_handler_specs``: the request and response types of an executor's
  ``@response_handler``s (``declared_request_types``), admitted to the checkpoint allow-list.
- ``FunctionalWorkflowAgent._workflow``: the functional workflow an app's ``.as_agent()`` wraps
  (``functional_workflow_of``).
- ``_typing_utils.is_instance_of`` also tells whether the framework can route a value to a
  declared input type (``dispatchable``: a ``TypedDict`` cannot be, in 1.23.0).
- ``agent_framework._workflows._checkpoint_encoding.encode_checkpoint_value`` /
  ``decode_checkpoint_value``: the encoding ``FileCheckpointStorage`` uses (JSON, non-JSON values as
  base64 pickle + type name, restricted unpickler with an allow-list). Only ``register_checkpoint_type``
  is public in 1.23.0. The refused type's name is read from the restricted unpickler's message.

What this relies on, measured on 1.23.0 and again on 1.26.0 (when a restored run saves checkpoints,
which kwargs a restore uses, that ``save(C_k)`` runs only after the host took every update of
superstep k) is written down and kept true in ``tests/runtime/test_af_private.py``.
"""

from __future__ import annotations

from .build_warnings import VALIDATION_LOGGER, quiet_repeated_build_warnings
from .checkpoints import (
    ALLOW_TYPE_FLAG,
    ALLOW_TYPES_ENV,
    ALWAYS_ALLOWED_TYPES,
    CheckpointTypeRefused,
    decode_checkpoint,
    decode_session,
    encode_checkpoint,
    encode_session,
    pickled_type_names,
    refused_type_names,
)
from .compat import (
    CONVERT_PARAMETERS,
    EXTRACT_RESPONSES_PARAMETERS,
    RUN_CORE_PARAMETERS,
    VERIFIED_RELEASES,
    check_compatibility,
    unverified_release,
)
from .pacing import pace_events
from .restore import make_restorable, on_events_end, typed_workflow_agent
from .workflow_types import (
    coerce_request_response,
    declared_request_types,
    dispatchable,
    functional_workflow_of,
    generated_name,
)

__all__ = [
    "ALLOW_TYPES_ENV",
    "ALLOW_TYPE_FLAG",
    "ALWAYS_ALLOWED_TYPES",
    "CONVERT_PARAMETERS",
    "EXTRACT_RESPONSES_PARAMETERS",
    "RUN_CORE_PARAMETERS",
    "VALIDATION_LOGGER",
    "VERIFIED_RELEASES",
    "CheckpointTypeRefused",
    "check_compatibility",
    "coerce_request_response",
    "declared_request_types",
    "decode_checkpoint",
    "decode_session",
    "dispatchable",
    "encode_checkpoint",
    "encode_session",
    "functional_workflow_of",
    "generated_name",
    "make_restorable",
    "on_events_end",
    "pace_events",
    "pickled_type_names",
    "quiet_repeated_build_warnings",
    "refused_type_names",
    "typed_workflow_agent",
    "unverified_release",
]
