"""The workflows of agent-framework's two Responses hosting samples (tests/samples/upstream,
SOURCES.json), hosted on this server instead of the samples' own hosts.

- `af-hosting/local_responses_workflow/app.py` builds its workflow at module level and serves it
  from its own FastAPI route (`agent-framework-hosting`, hypercorn, a file-backed checkpoint
  cursor per response id), none of which this server needs or installs: the module is not
  importable here. Below are its workflow lines as they are there (its `TerminalFormatter`, its
  module-level client, agent, executors and `workflow_builder`), served with
  `--app tests.samples.hosting_apps:workflow_builder`; its `call_server.py` drives it.
- `foundry-hosted-agents/responses/workflows/main.py` builds its workflow agent inside `main()`
  and hands it to `ResponsesHostServer` (`agent-framework-foundry-hosting`, not installed):
  `slogan_pipeline` builds the same agent, line for line.
"""

from __future__ import annotations

from typing import Any

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorResponse,
    Executor,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)
from agent_framework.openai import OpenAIChatClient

# region local_responses_workflow/app.py (verbatim but for the model client)


class TerminalFormatter(Executor):
    """Format the writer's output as the workflow's final response."""

    @handler
    async def handle(self, response: AgentExecutorResponse, ctx: WorkflowContext[Any, str]) -> None:
        """Yield one terminal-friendly slogan string.

        Args:
            response: The writer agent's response.
            ctx: Workflow context used to yield the final output.
        """
        slogan = response.agent_response.text.strip().strip('"')
        await ctx.yield_output(f'Slogan: "{slogan}"')


client = OpenAIChatClient()
writer = Agent(
    client=client,
    name="writer",
    instructions="You are an excellent slogan writer. Create one short slogan from the given brief.",
)
writer_ex = AgentExecutor(writer, context_mode="last_agent")
formatter_ex = TerminalFormatter(id="terminal_formatter")

workflow_builder = WorkflowBuilder(
    name="local_responses_slogan_workflow",
    start_executor=writer_ex,
    output_from=[formatter_ex],
).add_edge(writer_ex, formatter_ex)

# endregion


def slogan_pipeline() -> WorkflowAgent:
    """`foundry-hosted-agents/responses/workflows/main.py`'s `main()`, up to `ResponsesHostServer`."""
    client = OpenAIChatClient()

    writer_agent = Agent(
        client=client,
        instructions=("You are an excellent slogan writer. You create new slogans based on the given topic."),
        name="writer",
    )

    legal_agent = Agent(
        client=client,
        instructions=(
            "You are an excellent legal reviewer. "
            "Make necessary corrections to the slogan so that it is legally compliant."
        ),
        name="legal_reviewer",
    )

    format_agent = Agent(
        client=client,
        instructions=(
            "You are an excellent content formatter. "
            "You take the slogan and format it in a cool retro style when printing to a terminal."
        ),
        name="formatter",
    )

    writer_executor = AgentExecutor(writer_agent, context_mode="last_agent")
    legal_executor = AgentExecutor(legal_agent, context_mode="last_agent")
    format_executor = AgentExecutor(format_agent, context_mode="last_agent")

    return (
        WorkflowBuilder(
            start_executor=writer_executor,
            output_from=[format_executor],
        )
        .add_edge(writer_executor, legal_executor)
        .add_edge(legal_executor, format_executor)
        .build()
        .as_agent()
    )
