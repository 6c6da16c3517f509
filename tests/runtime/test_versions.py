"""App versions: the fingerprint is stable per build and changes with what checkpoints depend on;
`changes` names the difference a refusal reports; start-up builds each app once (the manifest
is read from the agent built at load), each run its own."""

from __future__ import annotations

import logging

import pytest
from agent_framework import Agent, Workflow, WorkflowBuilder

from durable_responses.examples.countdown import Countdown, CountdownStart
from durable_responses.examples.echo_agent import echo_agent
from durable_responses.protocol.request import parse_create_request
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.apps.versions import changes, fingerprint, manifest_of
from durable_responses.runtime.host import Host
from durable_responses.runtime.run import launcher
from durable_responses.runtime.settings import RuntimeSettings
from durable_responses.store import Store


def test_the_fingerprint_is_the_same_for_every_build_of_one_app() -> None:
    one = manifest_of(HostedApp.load("durable_responses.examples.approval:approval"))
    two = manifest_of(HostedApp.load("durable_responses.examples.approval:approval"))
    assert one == two and fingerprint(one) == fingerprint(two)
    assert fingerprint(one).startswith("fp-") and len(fingerprint(one)) == 15


def test_an_unnamed_workflow_has_one_fingerprint_across_builds() -> None:
    app = HostedApp.load("tests.runtime.test_versions:unnamed")
    assert "WorkflowBuilder-" in str(app.build().workflow.name)  # random per build
    again = HostedApp.load("tests.runtime.test_versions:unnamed")  # another build at load
    assert again.probe.workflow.name != app.probe.workflow.name
    assert fingerprint(manifest_of(app)) == fingerprint(manifest_of(again))


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


async def test_start_up_builds_each_app_once_and_each_run_builds_its_own(db_url: str) -> None:
    """The build at load (`HostedApp.probe`) is start-up's only one: the version manifest and the
    journal's start-up check read it. A run builds a fresh agent, never the probe."""
    builds: list[Agent] = []

    def counted_echo() -> Agent:
        builds.append(echo_agent())
        return builds[-1]

    app = HostedApp("counted_echo", counted_echo)
    host = Host(Store.open(db_url, lease_seconds=5), app, RuntimeSettings())
    assert host.settings.journal and builds == [app.probe]
    await host.start()
    try:
        created = await host.create("alice", parse_create_request({"input": "hi", "background": True}), None)
        assert created.run is not None
        await created.run.done.wait()
        assert (await host.get("alice", created.response_id))["status"] == "completed"
    finally:
        await host.stop()
    assert len(builds) == 2 and builds[1] is not app.probe


def test_the_journals_start_up_check_reads_the_agent_built_at_load(caplog: pytest.LogCaptureFixture) -> None:
    """The executors that build agents themselves are named from the probe, as from a build."""
    app = HostedApp.load("tests.runtime.test_versions:unnamed")
    with caplog.at_level(logging.INFO, "durable_responses.launcher"):
        launcher._log_unreachable(app, "countdown")
    hidden = ", ".join(app.probe.workflow.executors)
    assert f"executor(s) {hidden} build themselves" in caplog.text, caplog.text
