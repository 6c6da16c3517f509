"""agent-framework's functional and composition samples (tests/samples/test_functional_samples.py)
on `durable-responses serve` processes: the two that make their model client at import (bound to
the first event loop that uses it, so a process of their own), and `kill -9` mid-run, where a
restart completes the response with every output once: a functional workflow mid `@step` (its
finished steps are not run again), a graph mid model call with its state, a sub-workflow's
parent mid superstep.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from durable_responses.testing import FakeModel
from tests.samples.model import model_env
from tests.samples.test_functional_samples import OWN_LOOP, _email, _stream
from tests.support import db
from tests.support.responses import output_texts, wait_terminal
from tests.support.sse import check_sequence, stream_events
from tests.support.waits import wait_until

DOC = "This is a technical document about machine learning..."
# The type switch_case keeps in workflow state (`ctx.set_state`): the allow-list admits only the
# types a workflow declares (its executors' messages), so restoring its checkpoint needs it named.
STATE_TYPES = {"DURABLE_RESPONSES_CHECKPOINT_TYPES": "tests.samples.upstream.switch_case_edge_group:Email"}
QUESTION = "What's the difference between a list and a tuple in Python?"


def _report_parts(text: str) -> list[str]:
    parts = text.split("\n")
    assert [p.split(": ", 1)[0] for p in parts] == ["Classification", "Summary", "Review"], text
    return parts


@pytest.mark.crash
def test_samples_with_clients_made_at_import_run_and_a_kill_mid_step_resumes_after_it(
    server_factory: Any, database_url: str, fake: FakeModel
) -> None:
    """agent_integration (inline agents, then each in a `@step`) and naive_group_chat, on a
    process of their own; cached_pipeline killed -9 mid generate_summary (its writer call in
    flight) once classify_document's step is checkpointed (a live run goes a few ms ahead of its
    commits: a kill before that commit runs the step again, its agent not being journaled)."""
    apps = ",".join(f"{name}={app}" for name, app in OWN_LOOP.items())
    env = model_env(fake)
    first = server_factory(database_url, app=apps, env=env).start()
    final = _stream(first, "simple_pipeline", DOC)
    assert final.status == "completed", final.error
    (text,) = output_texts(final)
    parts = _report_parts(text)
    assert f'You said "Classify this document: {DOC}"' in parts[0] and f'"Summarize: {DOC}"' in parts[1], text
    client = first.client()
    chat = client.responses.create(model="group_chat", input=QUESTION, background=True)
    done = wait_terminal(client, chat.id, timeout=60)
    assert done.status == "completed", done.error
    check_sequence(stream_events(first.base_url, chat.id), label="group_chat")
    (text,) = output_texts(done)
    turns = text.split("\n\n")
    assert [t.split(": ", 1)[0] for t in turns] == ["user", "PythonExpert", "Critic", "Summarizer"], text
    assert all(QUESTION in t for t in turns), text

    fake.reply_delay = 2.0
    try:
        mark = len(fake.calls)
        created = client.responses.create(model="cached_pipeline", input=DOC, background=True)
        wait_until(
            lambda: _prompts(fake, mark, "Summarize:") > 0 and _checkpoints(database_url, created.id) >= 1,
            timeout=30,
            message="generate_summary never started",
        )
        first.kill()
        _assert_not_finished(database_url, created.id)
    finally:
        fake.reply_delay = 0.0
    second = server_factory(database_url, app=apps, env=env).start()
    final = wait_terminal(second.client(), created.id, timeout=90)
    assert final.status == "completed", (final.error, second.log())
    check_sequence(stream_events(second.base_url, created.id), label=created.id)
    (report,) = output_texts(final)
    _report_parts(report)
    # classify_document's step finished before the kill: answered from the checkpoint.
    assert _prompts(fake, mark, "Classify this document:") == 1
    assert _prompts(fake, mark, "Review this summary:") == 1


def _assert_not_finished(database_url: str, response_id: str) -> None:
    status = db.scalar(database_url, f"SELECT status FROM responses WHERE id = {db.quote(response_id)}")
    assert status in ("queued", "in_progress"), "killed too late"


def _prompts(fake: FakeModel, since: int, prefix: str) -> int:
    return sum(c.prompt.latest_user_text.startswith(prefix) for c in fake.calls_since(since))


def _checkpoints(database_url: str, response_id: str) -> int:
    return int(
        db.scalar(
            database_url, f"SELECT count(*) FROM checkpoints WHERE response_id = {db.quote(response_id)}"
        )
    )


# (app, input, when to kill given (fake, calls mark, database, response id), the output's texts)
CRASHES: list[tuple[str, str, Callable[[FakeModel, int, str, str], bool], list[str]]] = [
    # Mid the email assistant's streamed reply (switch_case: the email is in workflow state,
    # whose type the workflow declares nowhere: allowed by name, `STATE_TYPES`). simple_loop
    # cannot be resumed in a fresh process: its guesser keeps its guess in instance memory.
    (
        "tests.samples.functional_apps:spam_switch_case",
        "Hey there, our latest offer expires soon.",
        lambda fake, mark, url, rid: len(fake.calls) - mark >= 2,
        [
            '{"spam_decision": "NotSpam", "reason": "reason_value"}',
            '{"response": "response_value"}',
            "Email sent: response_value",
        ],
    ),
    # In EmailDelivery's 1 s send, after the sub-workflow validated the address (5 supersteps).
    (
        "tests.samples.functional_apps:smart_email",
        _email("user1@example.com"),
        lambda fake, mark, url, rid: _checkpoints(url, rid) >= 6,
        ["true"],
    ),
]


@pytest.mark.crash
@pytest.mark.parametrize(("app", "text", "when", "texts"), CRASHES, ids=["graph_state", "sub_workflow"])
def test_a_sample_killed_mid_run_completes_with_every_output_once(
    server_factory: Any,
    database_url: str,
    fake: FakeModel,
    app: str,
    text: str,
    when: Callable[[FakeModel, int, str, str], bool],
    texts: list[str],
) -> None:
    env = {**model_env(fake), **STATE_TYPES}
    fake.token_delay = 0.1  # switch_case's agents stream
    try:
        first = server_factory(database_url, app=app, env=env).start()
        mark = len(fake.calls)
        created = first.client().responses.create(model="m", input=text, background=True)
        wait_until(lambda: when(fake, mark, database_url, created.id), timeout=30, message="never got there")
        first.kill()
        _assert_not_finished(database_url, created.id)
    finally:
        fake.token_delay = 0.0
    second = server_factory(database_url, app=app, env=env).start()
    final = wait_terminal(second.client(), created.id, timeout=90)
    assert final.status == "completed", (final.error, second.log())
    check_sequence(stream_events(second.base_url, created.id), label=created.id)
    assert output_texts(final) == texts, output_texts(final)
