"""agent-framework's own samples (tests/samples/upstream, SOURCES.json) hosted as written, their
model client pointed at the fake model (issue 36), on SQLite and PostgreSQL: a streamed turn
completes; their human-in-the-loop turns complete (their own request dataclasses, no
`--allow-checkpoint-type`); `kill -9` mid-run and a restart complete with every output once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from durable_responses.testing import FakeModel
from tests.samples.model import environ, model_env
from tests.support import db
from tests.support.inprocess import InProcessServer
from tests.support.responses import output_texts, wait_terminal
from tests.support.sse import check_sequence, stream_events
from tests.support.waits import wait_until

FAN_OUT = "tests.samples.apps:fan_out_fan_in"
GUESSING = "tests.samples.apps:guessing_game"
FACTORS = "tests.samples.apps:factor_pairs"
WRITER = "tests.samples.apps:writer_with_feedback"
POEM = "tests.samples.upstream.05_functional_workflow_with_agents:poem_workflow"
CITY = "tests.samples.apps:city_agent"
CITY_QUESTION = "We are launching a new budget-friendly electric bike for urban commuters."


@pytest.fixture(scope="module", autouse=True)
def _environment(fake: FakeModel) -> Iterator[None]:
    """The samples' `OpenAIChatClient()` reads the process environment (in-process servers)."""
    with environ(model_env(fake)):
        yield


def _stream(srv: Any, text: str, **kwargs: Any) -> Any:
    client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="x", max_retries=0)
    with client.responses.stream(model="m", input=text, **kwargs) as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def _post(c: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = c.post("/v1/responses", json={"model": "m", "store": True, **body})
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    assert data["status"] == "completed", data
    return data


def _calls(resp: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in resp["output"] if o["type"] == "function_call"]


def _answer(c: httpx.Client, prev: dict[str, Any], output: str) -> dict[str, Any]:
    (call,) = _calls(prev)
    return _post(
        c,
        {
            "previous_response_id": prev["id"],
            "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": output}],
        },
    )


def test_fan_out_fan_in_sample_streams_its_consolidated_report(shared_servers: Any) -> None:
    final = _stream(shared_servers(FAN_OUT), CITY_QUESTION)
    assert final.status == "completed", final.error
    report = output_texts(final)[-1]
    assert report.startswith("Consolidated Insights"), output_texts(final)
    # Each of the three agents answered (the fake quotes the prompt), each in its own section.
    assert report.count(f'You said "{CITY_QUESTION}"') == 3, report
    for section in ("Research Findings:", "Marketing Angle:", "Legal/Compliance Notes:"):
        assert section in report, report


def test_checkpoint_sample_with_an_int_start_streams_its_factor_pairs(shared_servers: Any) -> None:
    final = _stream(shared_servers(FACTORS), "10")
    assert final.status == "completed", final.error
    pairs = json.loads(output_texts(final)[-1])
    assert pairs["10"] == [[1, 10], [2, 5], [5, 2]] and pairs["7"] == [[1, 7]] and len(pairs) == 10, pairs


def test_functional_sample_with_agents_streams_poem_and_review(
    server_factory: Any, database_url: str, fake: FakeModel
) -> None:
    # Its own process: the sample makes its client at import, bound to the first event loop
    # that uses it (one per process when served; the in-process servers each have their own).
    srv = server_factory(database_url, app=POEM, env=model_env(fake)).start()
    final = _stream(srv, "a cat learning to code")
    assert final.status == "completed", final.error
    (text,) = output_texts(final)
    assert text.startswith("Poem:\n") and "\n\nReview: " in text, text
    assert 'You said "Write a poem about: a cat learning to code"' in text, text


def test_structured_output_sample_agent_streams_a_turn(shared_servers: Any) -> None:
    final = _stream(shared_servers(CITY), "Tell me about Paris, France")
    assert final.status == "completed", final.error
    (text,) = output_texts(final)
    assert text.endswith('You said "Tell me about Paris, France"'), text


def test_structured_output_sample_agent_answers_in_its_schema(shared_servers: Any) -> None:
    """The sample's own OutputStruct asked for with text.format (the openai SDK's parse)."""
    from tests.samples.upstream.client_with_structured_output import OutputStruct

    srv: InProcessServer = shared_servers(CITY)
    client = openai.OpenAI(base_url=srv.base_url + "/v1", api_key="x", max_retries=0)
    parsed = client.responses.parse(model="m", input="Tell me about Paris, France", text_format=OutputStruct)
    assert parsed.status == "completed", parsed.error
    assert isinstance(parsed.output_parsed, OutputStruct), parsed.output_text
    assert parsed.output_parsed.city and parsed.output_parsed.description, parsed.output_parsed


def test_guessing_game_sample_takes_its_human_turns(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(GUESSING)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        first = _post(c, {"input": "start"})
        (call,) = _calls(first)
        data = json.loads(call["arguments"])["data"]
        assert data["prompt"].startswith("The agent guessed: "), data
        second = _answer(c, first, "higher")
        assert _calls(second), second
        done = _answer(c, second, "correct")
    texts = ["".join(p["text"] for p in o["content"]) for o in done["output"] if o["type"] == "message"]
    assert texts[-1] == "Guessed correctly!", done


def test_agents_with_hitl_sample_pauses_on_its_own_request_type_without_a_flag(shared_servers: Any) -> None:
    srv: InProcessServer = shared_servers(WRITER)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _post(c, {"input": "Write copy for a budget electric bike."})
        (call,) = _calls(paused)
        data = json.loads(call["arguments"])["data"]
        assert data["prompt"].startswith("Review the draft"), data
        revised = _answer(c, paused, "Make it punchier.")
        assert _calls(revised), revised  # the writer rewrote it; the coordinator asks again
        approved = _answer(c, revised, "approve")
    assert not _calls(approved), approved


@pytest.mark.crash
@pytest.mark.parametrize(
    ("app", "text"),
    [(FAN_OUT, CITY_QUESTION), (POEM, "a cat learning to code")],
    ids=["fan_out_fan_in", "functional_with_agents"],
)
def test_a_sample_killed_mid_run_completes_with_every_output_once(
    server_factory: Any, database_url: str, fake: FakeModel, app: str, text: str
) -> None:
    env = model_env(fake)
    fake.token_delay = 0.1  # the fan-out's agents stream
    fake.reply_delay = 2.0  # the functional sample's agents do not
    try:
        first = server_factory(database_url, app=app, env=env).start()
        mark = len(fake.calls)
        created = first.client().responses.create(model="m", input=text, background=True)
        wait_until(lambda: len(fake.calls) > mark, timeout=30, message="no model call started")
        first.kill()
        assert db.scalar(database_url, f"SELECT status FROM responses WHERE id = {db.quote(created.id)}") in (
            "queued",
            "in_progress",
        ), "killed too late"
    finally:
        fake.token_delay = 0.0
        fake.reply_delay = 0.0
    second = server_factory(database_url, app=app, env=env).start()
    client = second.client()
    final = wait_terminal(client, created.id, timeout=90)
    assert final.status == "completed", (final.error, second.log())
    texts = output_texts(final)
    events = stream_events(second.base_url, created.id)
    check_sequence(events, label=created.id)
    if app == FAN_OUT:
        assert texts[-1].startswith("Consolidated Insights") and texts.count(texts[-1]) == 1, texts
    else:
        assert len(texts) == 1 and texts[0].startswith("Poem:"), texts


@pytest.mark.crash
@pytest.mark.parametrize(
    ("app", "first_input", "answer", "asks", "last_answer", "last_text"),
    [
        (GUESSING, "start", "higher", "The agent guessed", "correct", "Guessed correctly!"),
        (
            WRITER,
            "Write copy for a budget electric bike.",
            "Make it punchier.",
            "Review the draft",
            "approve",
            None,
        ),
    ],
    ids=["guessing_game", "agents_with_HITL"],
)
def test_a_human_turn_killed_mid_model_call_completes_its_turns(
    server_factory: Any,
    database_url: str,
    fake: FakeModel,
    app: str,
    first_input: str,
    answer: str,
    asks: str,
    last_answer: str,
    last_text: str | None,
) -> None:
    """A sample's answering turn is killed -9 mid model call (the guessing agent guessing again;
    agents_with_HITL's writer revising) and finished by a restarted server: the sample asks its
    human again on its own request type (no flag), and the last answer completes the workflow."""
    env = model_env(fake)
    first = server_factory(database_url, app=app, env=env).start()
    client = first.client()
    paused = client.responses.create(model="m", input=first_input, store=True)
    (call,) = [o for o in paused.output if o.type == "function_call"]
    fake.token_delay = 0.2
    try:
        mark = len(fake.calls)
        answering = client.responses.create(
            model="m",
            previous_response_id=paused.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": answer}],
            background=True,
        )
        wait_until(lambda: len(fake.calls) > mark, timeout=30, message="no model call started")
        first.kill()
        assert db.scalar(
            database_url, f"SELECT status FROM responses WHERE id = {db.quote(answering.id)}"
        ) in ("queued", "in_progress"), "killed too late"
    finally:
        fake.token_delay = 0.0
    second = server_factory(database_url, app=app, env=env).start()
    client = second.client()
    answered = wait_terminal(client, answering.id, timeout=90)
    assert answered.status == "completed", (answered.error, second.log())
    check_sequence(stream_events(second.base_url, answering.id), label=answering.id)
    calls = [o for o in answered.output if o.type == "function_call"]
    assert len(calls) == 1 and asks in calls[0].arguments, answered.output
    done = client.responses.create(
        model="m",
        previous_response_id=answering.id,
        input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": last_answer}],
    )
    assert done.status == "completed", done.error
    assert not [o for o in done.output if o.type == "function_call"], done.output
    if last_text is not None:
        assert output_texts(done)[-1] == last_text, done.output
