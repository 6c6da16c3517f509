"""The approval workflow in two versions for the app-version tests: `APPROVAL_VARIANT=renamed`
gives its approval executor another id (a graph change a checkpoint cannot survive)."""

from __future__ import annotations

import os

from agent_framework import Workflow, WorkflowBuilder

from durable_responses.examples.approval import ApprovalExecutor, StartExecutor


class RenamedApproval(ApprovalExecutor):
    def __init__(self) -> None:
        super().__init__()
        self.id = "approve_step"


def approval() -> Workflow:
    start = StartExecutor()
    approver = RenamedApproval() if os.environ.get("APPROVAL_VARIANT") == "renamed" else ApprovalExecutor()
    builder = WorkflowBuilder(name="approval", start_executor=start, output_from=[approver])
    builder.add_edge(start, approver)
    return builder.build()
