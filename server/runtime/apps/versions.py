"""App versions: what version of an app a replica runs, and what changed between two versions.

A version is `DURABLE_RESPONSES_APP_VERSION` when set, else a fingerprint of the app's
manifest: for a workflow, its start executor, its executors (id and class), its edges and the
types it declares (what a checkpoint of it depends on); for an agent, its name and its tools;
for both, the agent-framework-core release (a checkpoint is that release's encoding).
The manifest is kept in the store with the version, so a refusal can name what changed.

Invariant: the fingerprint is a pure function of the manifest, so every replica of one build
computes the same version, and any change a checkpoint depends on gives another one.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from typing import Any

from agent_framework import Workflow

from .apps import HostedApp

FINGERPRINT_PREFIX = "fp-"


def manifest_of(app: HostedApp) -> dict[str, Any]:
    """What `app` is made of, as far as its stored responses depend on it."""
    return {**_shape(app), "framework": metadata.version("agent-framework-core")}


def _shape(app: HostedApp) -> dict[str, Any]:
    agent = app.probe  # the agent built at load: the same graph and tools every build gives
    workflow = getattr(agent, "workflow", None)
    if isinstance(workflow, Workflow):
        edges = sorted(
            f"{edge.source_id}->{edge.target_id}"
            for group in workflow.edge_groups
            for edge in group.edges
            if not edge.source_id.startswith("internal:")
        )
        # (Not its name: an unnamed builder's is random per build.)
        return {
            "kind": "workflow",
            "start": workflow.start_executor_id,
            "executors": {
                eid: f"{type(e).__module__}.{type(e).__qualname__}"
                for eid, e in sorted(workflow.executors.items())
            },
            "edges": edges,
            "types": list(app.checkpoint_types),
        }
    options = getattr(agent, "default_options", None) or {}
    tools = options.get("tools") or [] if isinstance(options, dict) else []
    return {
        "kind": "agent",
        "name": getattr(agent, "name", None),
        "tools": sorted(str(getattr(t, "name", t)) for t in tools),
    }


def fingerprint(manifest: dict[str, Any]) -> str:
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return FINGERPRINT_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:12]


def changes(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    """What differs from `old` to `new`, in a few words (for a refusal's message)."""
    if old is None:
        return "the server has no record of what the older version was made of"
    said: list[str] = []
    if old.get("kind") != new.get("kind"):
        return f"it was {old.get('kind')} and is now {new.get('kind')}"
    for key in ("name", "start", "framework"):
        if old.get(key) != new.get(key):
            said.append(f"{key} {old.get(key)!r} -> {new.get(key)!r}")
    for key in ("executors", "edges", "types", "tools"):
        before, after = old.get(key) or [], new.get(key) or []
        if isinstance(before, dict) and isinstance(after, dict):
            gone = sorted(set(before) - set(after))
            added = sorted(set(after) - set(before))
            moved = sorted(k for k in set(before) & set(after) if before[k] != after[k])
            said += [f"{key} removed: {', '.join(gone)}"] if gone else []
            said += [f"{key} added: {', '.join(added)}"] if added else []
            said += [f"{key} changed: {', '.join(moved)}"] if moved else []
        else:
            gone = sorted(set(before) - set(after))
            added = sorted(set(after) - set(before))
            said += [f"{key} removed: {', '.join(map(str, gone))}"] if gone else []
            said += [f"{key} added: {', '.join(map(str, added))}"] if added else []
    return "; ".join(said) if said else "nothing in its manifest (the version was set by hand)"
