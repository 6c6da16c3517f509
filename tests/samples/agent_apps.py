"""`--app` factories for the vendored checkpoint and workflow-as-agent samples
(tests/samples/upstream, SOURCES.json), as `hitl_apps` does for the human-in-the-loop ones.

Two samples do not run as written on a host that keeps nothing in memory between turns or on
agent-framework-core 1.26; each adaptation is named where it is made (`CheckpointedWorker`,
`_with_context` and `KwargsWorkflowAgent`), and the sample as written is hosted too.
"""

from __future__ import annotations

import importlib
from typing import Any

from agent_framework import (
    Agent,
    AgentExecutor,
    FileCheckpointStorage,
    FunctionInvocationContext,
    FunctionTool,
    Workflow,
    WorkflowAgent,
    WorkflowBuilder,
)
from agent_framework.openai import OpenAIChatClient
from agent_framework.orchestrations import SequentialBuilder

from tests.samples.upstream import (
    azure_chat_agents_tool_calls_with_feedback,
    checkpoint_with_human_in_the_loop,
    handoff_with_tool_approval_checkpoint_resume,
    sub_workflow_checkpoint,
    workflow_as_agent_kwargs,
    workflow_as_agent_reflection_pattern,
)


def release_notes_review() -> Workflow:
    """`checkpoint_with_human_in_the_loop.create_workflow(...)` with the sample's own file storage."""
    m = checkpoint_with_human_in_the_loop
    return m.create_workflow(checkpoint_storage=FileCheckpointStorage(storage_path=m.TEMP_DIR))


def sub_workflow_review() -> Workflow:
    """`sub_workflow_checkpoint.build_parent_workflow(...)` with the sample's own file storage."""
    m = sub_workflow_checkpoint
    m.CHECKPOINT_DIR.mkdir(parents=True, exist_ok=True)
    return m.build_parent_workflow(FileCheckpointStorage(m.CHECKPOINT_DIR))


def handoff_refunds() -> Workflow:
    """`handoff_with_tool_approval_checkpoint_resume.create_workflow(...)` (its file storage)."""
    m = handoff_with_tool_approval_checkpoint_resume
    return m.create_workflow(checkpoint_storage=FileCheckpointStorage(storage_path=m.CHECKPOINT_DIR))


def assistant_and_reviewer() -> WorkflowAgent:
    """`workflow_as_agent_checkpoint.basic_checkpointing()`'s agent (and, with one participant,
    `workflow_as_agent_with_session`'s assistant -> summarizer is the same shape)."""
    client = OpenAIChatClient()
    assistant = Agent(
        client=client, name="assistant", instructions="You are a helpful assistant. Keep responses brief."
    )
    reviewer = Agent(
        client=client,
        name="reviewer",
        instructions="You are a reviewer. Provide a one-sentence summary of the assistant's response.",
    )
    return SequentialBuilder(participants=[assistant, reviewer]).build().as_agent()


def memory_assistant() -> WorkflowAgent:
    """`workflow_as_agent_checkpoint.checkpointing_with_thread()`'s agent (history across turns)."""
    assistant = Agent(
        client=OpenAIChatClient(),
        name="memory_assistant",
        instructions="You are a helpful assistant with good memory. Reference previous conversation when relevant.",
    )
    return SequentialBuilder(participants=[assistant]).build().as_agent()


def assistant_and_summarizer() -> WorkflowAgent:
    """`workflow_as_agent_with_session.main()`'s agent."""
    client = OpenAIChatClient()
    assistant = Agent(
        client=client,
        name="assistant",
        instructions=(
            "You are a helpful assistant. Answer questions based on the conversation "
            "history. If the user asks about something mentioned earlier, reference it."
        ),
    )
    summarizer = Agent(
        client=client,
        name="summarizer",
        instructions=(
            "You are a summarizer. After the assistant responds, provide a brief "
            "one-sentence summary of the key point from the conversation so far."
        ),
    )
    return SequentialBuilder(participants=[assistant, summarizer]).build().as_agent()


def reflection() -> WorkflowAgent:
    """`workflow_as_agent_reflection_pattern.main()`: worker <-> reviewer, as an agent."""
    m = workflow_as_agent_reflection_pattern
    worker = m.Worker(id="worker", client=OpenAIChatClient())
    reviewer = m.Reviewer(id="reviewer", client=OpenAIChatClient())
    return (
        WorkflowBuilder(start_executor=worker)
        .add_edge(worker, reviewer)
        .add_edge(reviewer, worker)
        .build()
        .as_agent()
    )


def reflection_with_human() -> WorkflowAgent:
    """`workflow_as_agent_human_in_the_loop.main()`: the worker and a reviewer that always asks
    a human (its `ReviewResponse` answer type)."""
    m = importlib.import_module("tests.samples.upstream.workflow_as_agent_human_in_the_loop")
    worker = m.Worker(id="worker", client=OpenAIChatClient())
    reviewer = m.ReviewerWithHumanInTheLoop(worker_id="worker")
    return (
        WorkflowBuilder(start_executor=worker)
        .add_edge(worker, reviewer)
        .add_edge(reviewer, worker)
        .build()
        .as_agent()
    )


def kwargs_tools() -> WorkflowAgent:
    """`workflow_as_agent_kwargs.main()`'s workflow agent (its per-call kwargs are the caller's:
    see `KwargsAgent` for the one a host would deploy)."""
    m = workflow_as_agent_kwargs
    agent = Agent(
        client=OpenAIChatClient(),
        name="assistant",
        instructions=(
            "You are a helpful assistant. Use the available tools to help users. "
            "When asked about user data, use get_user_data. "
            "When asked to call an API, use call_api."
        ),
        tools=[m.get_user_data, m.call_api],
    )
    return SequentialBuilder(participants=[agent]).build().as_agent()


def writer_with_tools_and_feedback() -> Workflow:
    """`azure_chat_agents_tool_calls_with_feedback.main()`."""
    m = azure_chat_agents_tool_calls_with_feedback
    writer_agent = AgentExecutor(m.create_writer_agent())
    final_editor_agent = AgentExecutor(m.create_final_editor_agent())
    coordinator = m.Coordinator(
        id="coordinator", writer_id="writer_agent", final_editor_id="final_editor_agent"
    )
    return (
        WorkflowBuilder(start_executor=writer_agent)
        .add_edge(writer_agent, coordinator)
        .add_edge(coordinator, writer_agent)
        .add_edge(final_editor_agent, coordinator)
        .add_edge(coordinator, final_editor_agent)
        .build()
    )


# The sample imports the reflection sample as a top-level module (it puts its own folder on
# sys.path), so its `Worker` and `ReviewRequest` are that module's.
_hitl = importlib.import_module("tests.samples.upstream.workflow_as_agent_human_in_the_loop")


class CheckpointedWorker(_hitl.Worker):  # type: ignore[misc,name-defined]
    """The reflection sample's `Worker` with its pending reviews in its checkpointed state: the
    sample keeps them in memory only, so a workflow rebuilt for the answering turn (as a host
    that keeps nothing in memory builds it) does not know the review it asked for."""

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"pending_requests": self._pending_requests}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self._pending_requests = state.get("pending_requests", {})


def reflection_with_human_checkpointed() -> WorkflowAgent:
    """`workflow_as_agent_human_in_the_loop.main()` with `CheckpointedWorker` for its `Worker`."""
    worker = CheckpointedWorker(id="worker", client=OpenAIChatClient())
    reviewer = _hitl.ReviewerWithHumanInTheLoop(worker_id="worker")
    return (
        WorkflowBuilder(start_executor=worker)
        .add_edge(worker, reviewer)
        .add_edge(reviewer, worker)
        .build()
        .as_agent()
    )


def _with_context(sample_tool: FunctionTool) -> FunctionTool:
    """The sample's tool, its run-time kwargs read from a `FunctionInvocationContext`:
    agent-framework-core 1.26 hands `function_invocation_kwargs` to a tool only through such a
    parameter (the sample's `**kwargs` receive nothing), so each adapted tool calls the sample's
    own function with `ctx.kwargs`."""
    func = sample_tool.func
    assert func is not None

    def call(ctx: FunctionInvocationContext, **arguments: Any) -> Any:
        return func(**arguments, **ctx.kwargs)

    return FunctionTool(
        name=sample_tool.name,
        description=sample_tool.description,
        func=call,
        input_model=sample_tool.parameters(),
        approval_mode="never_require",
    )


class KwargsWorkflowAgent(WorkflowAgent):
    """`workflow_as_agent_kwargs.main()`'s per-call context (its `custom_data` and `user_token`,
    verbatim) given by the agent itself: over HTTP no caller passes Python kwargs, so a deployer
    puts them in `run()`, which the host calls for every turn and every recovery."""

    def run(self, messages: Any = None, **kwargs: Any) -> Any:
        if not kwargs.get("function_invocation_kwargs"):
            custom_data = {
                "api_config": {
                    "base_url": "https://api.example.com",
                    "endpoints": {
                        "users": "/v1/users",
                        "orders": "/v1/orders",
                        "products": "/v1/products",
                    },
                },
            }
            user_token = {
                "user_name": "bob@contoso.com",
                "access_level": "admin",
            }
            kwargs["function_invocation_kwargs"] = {"custom_data": custom_data, "user_token": user_token}
        return super().run(messages, **kwargs)


def kwargs_tools_deployed() -> WorkflowAgent:
    """`workflow_as_agent_kwargs.main()`'s workflow in `KwargsWorkflowAgent`, its tools adapted
    (`_with_context`)."""
    m = workflow_as_agent_kwargs
    agent = Agent(
        client=OpenAIChatClient(),
        name="assistant",
        instructions=(
            "You are a helpful assistant. Use the available tools to help users. "
            "When asked about user data, use get_user_data. "
            "When asked to call an API, use call_api."
        ),
        tools=[_with_context(m.get_user_data), _with_context(m.call_api)],
    )
    return KwargsWorkflowAgent(SequentialBuilder(participants=[agent]).build())
