"""Approval: the human-in-the-loop workflow of seed 002, start -> approval.

The start executor forwards the user's text; the approval executor pauses with ``ctx.request_info`` and,
once answered, yields "Completed with decision: <answer>". Invariant: the executors match the seed
exactly (only a stable workflow name is added, so checkpoints group under one name), so the seed's
scenario (pause, compute recreated, answer) runs against it unchanged.
"""

from __future__ import annotations

from agent_framework import (
    Executor,
    Message,
    Workflow,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)


class StartExecutor(Executor):
    def __init__(self) -> None:
        super().__init__(id="start")

    @handler
    async def handle(self, messages: list[Message], ctx: WorkflowContext[str, str]) -> None:
        if not messages or not messages[-1].text.strip():
            raise ValueError("The approval spike requires a non-empty user message.")
        await ctx.send_message(messages[-1].text.strip())


class ApprovalExecutor(Executor):
    def __init__(self) -> None:
        super().__init__(id="approval")

    @handler
    async def request(self, value: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.request_info(request_data=f"Approve: {value}", response_type=str)

    @response_handler
    async def respond(self, original_request: str, response: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"Completed with decision: {response}")


def approval() -> Workflow:
    """A fresh approval workflow (the host builds one per run)."""
    start = StartExecutor()
    approver = ApprovalExecutor()
    # A stable name (the seed leaves it random) so stored checkpoints group by workflow.
    builder = WorkflowBuilder(name="approval", start_executor=start, output_from=[approver])
    builder.add_edge(start, approver)
    return builder.build()


def approval_agent() -> WorkflowAgent:
    """The approval workflow wrapped as an agent, named as in the seed."""
    return approval().as_agent(name="checkpoint-repro")
