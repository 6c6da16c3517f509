"""Run the scenario apps in-process and describe what they emit (no host server involved).

Helpers the tests share (`stream`, `describe`, `texts`, `usage_in`, `scan_checkpoints`), and a
command line that prints each scenario's update stream, usage and checkpoint types, against a
fresh fake model: `python -m tests.agents.trace [--api chat|responses] [SCENARIO ...]`.
Invariant: nothing here changes what the apps or the framework do; it only records it.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from agent_framework import AgentResponseUpdate, Content, FileCheckpointStorage, Workflow
from agent_framework._workflows._checkpoint_encoding import decode_checkpoint_value

from durable_responses.testing import FakeModel
from tests.agents import apps

SCENARIOS = [
    "tool_agent",
    "approval_agent",
    "sequential",
    "sequential_all_outputs",
    "sequential_request_info",
    "sequential_approval",
    "concurrent",
    "handoff",
    "group_chat",
    "group_chat_manager",
    "magentic",
]
PROMPTS = {
    "tool_agent": "lookup_order order_id=A1",
    "approval_agent": "refund_payment order_id=A1 amount=5",
    "sequential_approval": "refund_payment order_id=A1 amount=5",
    "handoff": "I have a billing question about order A1",
}
# The one type outside agent_framework.* the official orchestrations checkpoint: HandoffBuilder's
# `ctx.request_info(..., list[Message])` stores the response type `list[Message]`.
GENERIC_ALIAS = "types:GenericAlias"


def kind(content: Content) -> str:
    if content.type == "function_call" and content.name == "request_info":
        return "request_info"
    return content.type


def describe(updates: list[AgentResponseUpdate]) -> list[str]:
    """`author|message id|content type xN` runs; message ids shortened to their first 8 chars."""
    rows = [(u.author_name, (u.message_id or "None")[:8], kind(c)) for u in updates for c in u.contents]
    return [f"{a}|{m}|{k}" + (f" x{n}" if (n := len(list(g))) > 1 else "") for (a, m, k), g in groupby(rows)]


def runs(updates: list[AgentResponseUpdate]) -> list[tuple[str | None, str]]:
    """(author, content type) runs, counts and message ids dropped."""
    return [k for k, _ in groupby((u.author_name, kind(c)) for u in updates for c in u.contents)]


def texts(updates: list[AgentResponseUpdate]) -> list[tuple[str | None, str]]:
    """The text per (author, message id), honouring `merge_mode="replace"` as the framework does."""
    order: list[tuple[str | None, str | None]] = []
    by: dict[tuple[str | None, str | None], str] = {}
    for u in updates:
        for c in u.contents:
            if c.type != "text":
                continue
            key = (u.author_name, u.message_id)
            if key not in by:
                order.append(key)
                by[key] = ""
            by[key] = (c.text or "") if c.merge_mode == "replace" else by[key] + (c.text or "")
    return [(k[0], by[k]) for k in order]


def usage_in(updates: list[AgentResponseUpdate]) -> tuple[int, int]:
    """(input, output) tokens summed over every usage content in the stream."""
    details = [c.usage_details or {} for u in updates for c in u.contents if c.type == "usage"]
    return (
        sum(int(d.get("input_token_count") or 0) for d in details),
        sum(int(d.get("output_token_count") or 0) for d in details),
    )


async def stream(agent: Any, messages: Any, **kwargs: Any) -> list[AgentResponseUpdate]:
    return [u async for u in agent.run(messages, stream=True, **kwargs)]


def as_agent(name: str) -> Any:
    built = getattr(apps, name)()
    return built.as_agent(name=name) if isinstance(built, Workflow) else built


@dataclass
class CheckpointScan:
    """The pickled values of a checkpoint directory: every type, and those a default decoder refuses."""

    pickled: set[str] = field(default_factory=set)
    refused: dict[str, set[str]] = field(default_factory=dict)  # module:qualname -> paths


def _pickles(value: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(value, dict):
        if "__pickled__" in value and "__type__" in value:
            yield path, value
            return
        for k, v in value.items():
            yield from _pickles(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _pickles(v, f"{path}[{i}]")


def scan_checkpoints(directory: str) -> CheckpointScan:
    """Decode every pickled value with the framework's default allow-list (`allowed_types=frozenset()`)."""
    scan = CheckpointScan()
    for name in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(name, encoding="utf-8") as f:
            data = json.load(f)
        for path, value in _pickles(data, ""):
            scan.pickled.add(str(value["__type__"]))
            try:
                decode_checkpoint_value(value, allowed_types=frozenset())
            except Exception as exc:
                match = re.search(r"type '([^']+)'", str(exc))
                scan.refused.setdefault(match.group(1) if match else str(exc), set()).add(path)
    return scan


async def _trace(name: str, fake: FakeModel) -> None:
    directory = tempfile.mkdtemp(prefix=f"trace-{name}-")
    storage = FileCheckpointStorage(directory, allowed_checkpoint_types=[GENERIC_ALIAS])
    agent = as_agent(name)
    mark = fake.mark()
    extra: dict[str, Any] = (
        {"checkpoint_storage": storage} if isinstance(getattr(apps, name)(), Workflow) else {}
    )
    try:
        updates = await stream(agent, PROMPTS.get(name, "Write a haiku about tea"), **extra)
    except Exception as exc:
        print(f"== {name}: raised {type(exc).__name__}: {exc}")
        return
    print(f"== {name}")
    for row in describe(updates):
        print("   ", row)
    for author, text in texts(updates):
        print(f"    text {author}: {text[:100]!r}")
    print(f"    usage in updates {usage_in(updates)}; the fake reported {fake.usage_total(since=mark)}")
    print(f"    model calls: {[c.agent for c in fake.calls_since(mark)]}")
    scan = scan_checkpoints(directory)
    print(f"    checkpoint pickles {sorted(scan.pickled)}; refused by default {sorted(scan.refused)}")


async def _main(api: str, names: list[str]) -> None:
    with FakeModel() as fake:
        os.environ.update(fake.env(api))
        for name in names:
            await _trace(name, fake)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.agents.trace")
    parser.add_argument("--api", choices=["chat", "responses"], default="chat")
    parser.add_argument("scenarios", nargs="*", default=SCENARIOS)
    args = parser.parse_args()
    asyncio.run(_main(args.api, args.scenarios))


if __name__ == "__main__":
    main()
