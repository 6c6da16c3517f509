"""App versions: the fingerprint is stable per build and changes with what checkpoints depend on;
`changes` names the difference a refusal reports."""

from __future__ import annotations

import pytest
from agent_framework import Workflow, WorkflowBuilder

from durable_responses.examples.countdown import Countdown, CountdownStart
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.apps.versions import changes, fingerprint, manifest_of


def test_the_fingerprint_is_the_same_for_every_build_of_one_app() -> None:
    one = manifest_of(HostedApp.load("durable_responses.examples.approval:approval"))
    two = manifest_of(HostedApp.load("durable_responses.examples.approval:approval"))
    assert one == two and fingerprint(one) == fingerprint(two)
    assert fingerprint(one).startswith("fp-") and len(fingerprint(one)) == 15


def test_an_unnamed_workflow_has_one_fingerprint_across_builds() -> None:
    app = HostedApp.load("tests.runtime.test_versions:unnamed")
    assert "WorkflowBuilder-" in str(app.build().workflow.name)  # random per build
    assert fingerprint(manifest_of(app)) == fingerprint(manifest_of(app))


def unnamed() -> Workflow:
    start, ticker = CountdownStart(), Countdown()
    builder = WorkflowBuilder(start_executor=start, output_from=[ticker])
    builder.add_edge(start, ticker)
    builder.add_edge(ticker, ticker)
    return builder.build()


def test_a_renamed_executor_is_another_version_and_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    old = manifest_of(HostedApp.load("tests.e2e.versioned_apps:approval"))
    monkeypatch.setenv("APPROVAL_VARIANT", "renamed")
    new = manifest_of(HostedApp.load("tests.e2e.versioned_apps:approval"))
    assert fingerprint(old) != fingerprint(new)
    said = changes(old, new)
    assert "executors removed: approval" in said and "executors added: approve_step" in said
    assert "edges removed: start->approval" in said


def test_an_agent_is_its_name_and_tools_and_the_framework_release_counts() -> None:
    agent = manifest_of(HostedApp.load("durable_responses.examples.tools:tools_agent"))
    assert agent["kind"] == "agent" and agent["tools"] == ["lookup_order", "refund_payment"]
    upgraded = {**agent, "framework": "9.9.9"}
    assert fingerprint(upgraded) != fingerprint(agent)
    assert f"framework '{agent['framework']}' -> '9.9.9'" in changes(agent, upgraded)
    assert "no record" in changes(None, agent)
