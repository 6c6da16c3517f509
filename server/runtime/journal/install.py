"""Putting the journal's middleware on a run's agents: a plain agent's run, the agents of a
workflow's agent executors (which include every agent of the orchestration builders), and, for
a custom executor that builds its own agent, `journaled`."""

from __future__ import annotations

from typing import Any

from .middleware import JournalChatMiddleware, JournalFunctionMiddleware

__all__ = ["install", "journaled", "unreachable"]


def _middleware_for(executor: str) -> list[Any]:
    return [JournalChatMiddleware(executor), JournalFunctionMiddleware(executor)]


def journaled(agent: Any, name: str | None = None) -> Any:
    """Journal the model and tool calls of `agent` (an agent-framework `Agent`) when it runs for
    a hosted response: for a custom executor that builds its own agent, which the host cannot
    reach. `name` tells its calls apart from other agents' in the same superstep (default: the
    agent's name). Returns the agent."""
    _attach(agent, name or getattr(agent, "name", None) or "agent")
    return agent


def _ours(m: Any) -> bool:
    return isinstance(m, (JournalChatMiddleware, JournalFunctionMiddleware))


def _attach(agent: Any, executor: str) -> bool:
    """Put the journal's middleware on `agent`'s chat client (its public `chat_middleware` and
    `function_middleware` lists), replacing any earlier one: a client's own middleware composes
    with what a run passes per call (`client_kwargs`), while an agent's own (`agent.middleware`)
    replaces that in agent-framework 1.23, which would drop the host's request options. Outermost,
    so a replayed call skips whatever would happen to a live one. An agent without such a client
    gets it in `agent.middleware`."""
    client = getattr(agent, "client", None)
    chat, function = getattr(client, "chat_middleware", None), getattr(client, "function_middleware", None)
    if isinstance(chat, list) and isinstance(function, list):
        assert client is not None
        client.chat_middleware = [JournalChatMiddleware(executor), *(m for m in chat if not _ours(m))]
        client.function_middleware = [
            JournalFunctionMiddleware(executor),
            *(m for m in function if not _ours(m)),
        ]
        return True
    if not hasattr(agent, "middleware"):
        return False
    agent.middleware = [*_middleware_for(executor), *(m for m in (agent.middleware or []) if not _ours(m))]
    return True


def install(agent: Any, *, is_workflow: bool) -> dict[str, Any]:
    """Journal the agents of a run: a workflow's agent executors' agents (middleware added to
    each client, idempotent), or a plain agent (returns the `middleware` argument for its
    `run`). Returns the keyword arguments to add to `agent.run`."""
    if not is_workflow:
        if hasattr(agent, "middleware"):
            return {"middleware": _middleware_for(getattr(agent, "name", None) or "agent")}
        return {}
    workflow = getattr(agent, "workflow", None)
    # An executor's calls are told apart by its id; agents that share one client share a key
    # (their places then interleave only if they run in the same superstep, and a record whose
    # input differs is never replayed).
    by_client: dict[int, list[str]] = {}
    agents: dict[int, Any] = {}
    for executor_id, executor in (getattr(workflow, "executors", None) or {}).items():
        inner = getattr(executor, "agent", None)
        if inner is not None:
            key = id(getattr(inner, "client", None) or inner)
            by_client.setdefault(key, []).append(str(executor_id))
            agents.setdefault(key, inner)
    for key, ids in by_client.items():
        _attach(agents[key], "+".join(sorted(ids)))
    return {}


def unreachable(agent: Any, *, is_workflow: bool) -> list[str]:
    """The app's own executors that are not agent executors (a workflow), or the app itself (an
    agent without agent-framework's middleware): agents they build themselves opt in with
    `journaled`. The framework's own executors (an orchestration's adapters) are left out."""
    if not is_workflow:
        return [] if hasattr(agent, "middleware") else [getattr(agent, "name", None) or type(agent).__name__]
    workflow = getattr(agent, "workflow", None)
    executors = getattr(workflow, "executors", None)
    if not isinstance(executors, dict):  # a functional workflow: its steps call agents themselves
        return [getattr(agent, "name", None) or type(agent).__name__]
    return [
        str(executor_id)
        for executor_id, executor in executors.items()
        if getattr(executor, "agent", None) is None
        and not type(executor).__module__.startswith("agent_framework")
    ]
