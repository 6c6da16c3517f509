"""Review: a human-in-the-loop workflow with its own request and answer dataclasses.

The start executor takes a `str` (the topic, the input's text) and drafts a title; the reviewer
pauses with `ctx.request_info(ReviewRequest(...), response_type=Verdict)`. The client sees a
`function_call` item named `request_info` whose arguments carry the request
(`{"draft": ..., "round": 1}`) and answers with a `function_call_output` holding a `Verdict` as
JSON (`{"approved": false, "note": "shorter"}`) and `previous_response_id`. A rejected draft is
revised and asked about again; an approved one is the output.

`ReviewRequest` and `Verdict` are the workflow's own types: the host admits them to the
checkpoint allow-list because the workflow declares them (its `@response_handler`), so the pause
and the answer need no `--allow-checkpoint-type`. Deterministic and model-free.

    durable-responses serve --app durable_responses.examples.review:review
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_framework import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler, response_handler


@dataclass
class ReviewRequest:
    """What the reviewer is asked: a draft, and how many rounds it has been through."""

    draft: str
    round: int


@dataclass
class Verdict:
    """The reviewer's answer."""

    approved: bool
    note: str = ""


class Drafter(Executor):
    """Start executor: takes the topic (a `str`) and writes the first draft."""

    def __init__(self) -> None:
        super().__init__(id="drafter")

    @handler
    async def draft(self, topic: str, ctx: WorkflowContext[ReviewRequest]) -> None:
        await ctx.send_message(
            ReviewRequest(draft=f"A short guide to {topic.strip() or 'everything'}", round=1)
        )


class Reviewer(Executor):
    """Asks a person about each draft; revises a rejected one, yields an approved one."""

    def __init__(self) -> None:
        super().__init__(id="reviewer")

    @handler
    async def ask(self, request: ReviewRequest, ctx: WorkflowContext[ReviewRequest, str]) -> None:
        await ctx.request_info(request_data=request, response_type=Verdict)

    @response_handler
    async def decided(
        self, request: ReviewRequest, verdict: Verdict, ctx: WorkflowContext[ReviewRequest, str]
    ) -> None:
        if verdict.approved:
            await ctx.yield_output(f"Approved after {request.round} round(s): {request.draft}")
            return
        revised = f"{request.draft} ({verdict.note})" if verdict.note else f"{request.draft} (revised)"
        await ctx.request_info(request_data=ReviewRequest(revised, request.round + 1), response_type=Verdict)


def review() -> Workflow:
    """A fresh review workflow (the host builds one per run)."""
    drafter = Drafter()
    reviewer = Reviewer()
    builder = WorkflowBuilder(name="review", start_executor=drafter, output_from=[reviewer])
    builder.add_edge(drafter, reviewer)
    return builder.build()
