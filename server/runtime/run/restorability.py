"""Telling, as a run saves checkpoints, which of their values a recovery could not read back.

A checkpoint taken while the workflow waits on a request is decoded at `save()` and refused
there (`SqlCheckpointStorage`); any other checkpoint is read back only when the response is
recovered after a crash or a restart, so a class the app keeps in its workflow state without
declaring it (`ctx.set_state`) would fail that recovery with nobody told before. This check
reads the type names of each checkpoint's pickled values (a scan of its text) and decodes the
checkpoint through the allow-list only when a name is new to the process, so a run pays a decode
per new type, not per superstep.

Invariant: each refused type is logged once per process and allow-list, with the setting that
admits it; nothing is refused or changed here (the run goes on as before).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .._af_private import ALLOW_TYPE_FLAG, ALLOW_TYPES_ENV, pickled_type_names, refused_type_names

log = logging.getLogger("durable_responses.checkpoints")

# Per allow-list: the pickled type names seen in a saved checkpoint already (admitted or told).
_seen: dict[tuple[str, ...], set[str]] = {}


def check_restorable(text: str, allowed_types: tuple[str, ...], response_id: str) -> list[str]:
    """Log the types of ``text`` (an encoded checkpoint) that a recovery would refuse, each the
    first time this process meets it under ``allowed_types``; returns the ones logged now."""
    seen = _seen.setdefault(allowed_types, set())
    new = pickled_type_names(text) - seen
    if not new:
        return []
    seen |= new
    refused = [name for name in refused_type_names(text, allowed_types=allowed_types) if name in new]
    for name in refused:
        log.warning("%s", _message(name, response_id))
    return refused


def _message(type_name: str, response_id: str) -> str:
    _, _, qualname = type_name.partition(":")
    return (
        f"response {response_id}: its workflow's checkpoint holds a value of type '{type_name}', which "
        "the checkpoint allow-list refuses (no handler of the workflow declares it: kept in its state?), "
        "so the response cannot be recovered after a crash or restart. If the type is trusted, allow "
        f"it with '{ALLOW_TYPE_FLAG} {type_name}', the environment variable {ALLOW_TYPES_ENV}, or "
        f"agent_framework.register_checkpoint_type({qualname.rpartition('.')[2] or qualname}) in the "
        "app's module."
    )


def forget(allowed_types: Iterable[str] | None = None) -> None:
    """Forget what was seen (all, or under one allow-list): the next checkpoint is checked anew."""
    if allowed_types is None:
        _seen.clear()
    else:
        _seen.pop(tuple(allowed_types), None)
