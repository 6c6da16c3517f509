"""agent-framework's own functional, control-flow, composition, state and parallelism samples
(tests/samples/upstream, SOURCES.json) hosted as written, their model client pointed at the fake
model, on SQLite and PostgreSQL: a streamed turn (the openai SDK) shows what the sample's
workflow yields, in a valid event sequence; a background run read back with GET completes; the
human-in-the-loop and cancellation turns behave as the contract says; `kill -9` mid-run and a
restart complete with every output once.

One in-process server per dialect hosts every sample (`--app NAME=MODULE:ATTR`, the request's
`model` picks it), but the two samples that make their model client at import (bound to the
first event loop that uses it): those get `durable-responses serve` processes of their own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from durable_responses.testing import FakeModel
from tests.samples.model import close_clients, environ, http, model_env, openai_client
from tests.support.inprocess import InProcessServer
from tests.support.responses import output_texts, wait_terminal
from tests.support.sse import check_sequence, stream_events
from tests.support.waits import wait_until

U = "tests.samples.upstream."
F = "tests.samples.functional_apps:"
APPS = {
    "text_workflow": U + "06_functional_workflow_basics:text_workflow",
    "first_graph": U + "07_first_graph_workflow:create_workflow",
    "basic_pipeline": U + "basic_pipeline:data_pipeline",
    "streaming_pipeline": U + "basic_streaming_pipeline:data_pipeline",
    "parallel_pipeline": U + "parallel_pipeline:research_pipeline",
    "steps_pipeline": U + "steps_and_checkpointing:data_pipeline",
    "review_pipeline": U + "hitl_review:review_pipeline",
    "step1": U + "step1_executors_and_edges:create_workflow",
    "step1_explicit": F + "exclamation",
    "writer_reviewer": F + "writer_reviewer",
    "edge_condition": F + "spam_edge_condition",
    "switch_case": F + "spam_switch_case",
    "multi_selection": F + "email_triage",
    "simple_loop": F + "guess_loop",
    "sequential_executors": F + "upper_reverse",
    "sequential_streaming": F + "upper_reverse_functions",
    "labelled_outputs": F + "labelled_outputs",
    "cancellation": U + "workflow_cancellation:build_workflow",
    "sub_basics": F + "text_processing",
    "sub_kwargs": F + "data_subworkflow",
    "sub_parallel": F + "resource_requests",
    "sub_interception": F + "smart_email",
    "state_with_agents": F + "spam_with_state",
    "kwargs_global": F + "researcher_writer",
    "kwargs_per_agent": F + "researcher_writer_per_agent",
    "aggregate": F + "average_and_sum",
    "map_reduce": F + "word_count",
}
ALL = ",".join(f"{name}={app}" for name, app in APPS.items())
# The samples whose module makes its model client at import: served by processes of their own.
OWN_LOOP = {
    "simple_pipeline": U + "agent_integration:simple_pipeline",
    "cached_pipeline": U + "agent_integration:cached_pipeline",
    "group_chat": U + "naive_group_chat:group_chat",
}
URL = "https://example.com/api/data"
SLOGAN = "Create a slogan for a new electric SUV that is affordable and fun to drive."
LONG_EMAIL = "Hello team, here are the updates for this week. " * 4  # > LONG_EMAIL_THRESHOLD (100)
REQUESTS = [
    {"request_type": "resource", "resource_type": "cpu", "amount": 2, "priority": "normal"},
    {"request_type": "policy", "resource_type": "cpu", "amount": 3, "policy_type": "quota"},
    {"request_type": "resource", "resource_type": "gpu", "amount": 1, "priority": "high"},
    {"request_type": "policy", "resource_type": "cpu", "amount": 1, "policy_type": "security"},
]


def _email(recipient: str) -> str:
    return json.dumps({"recipient": recipient, "subject": "Hello", "body": "This is a test email."})


def _word_counts(texts: list[str]) -> None:
    paths = json.loads(texts[-1])  # the reducers' files: a list of strings, shown as JSON
    counts: dict[str, int] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            word, count = line.split(": ")
            counts[word] = counts.get(word, 0) + int(count)
    assert len(paths) == 4 and counts == {"the": 3, "cat": 1, "and": 2, "dog": 1, "bird": 1}, counts


# (app, input text, the output's message texts, or a check of them)
CASES: list[tuple[str, str, list[str] | Callable[[list[str]], None]]] = [
    ("text_workflow", "hello world", ["DLROW OLLEH"]),
    ("first_graph", "hello world", ["DLROW OLLEH"]),
    ("basic_pipeline", URL, [f"[VALID] [200] Data from {URL}"]),
    ("streaming_pipeline", URL, [f"[200] Data from {URL} (valid=True)"]),
    (
        "parallel_pipeline",
        "AI agents",
        [
            "Research Summary:\n  - Web results for 'AI agents': 10 articles found\n"
            "  - Papers on 'AI agents': 3 relevant papers\n  - News about 'AI agents': 5 recent articles"
        ],
    ),
    ("steps_pipeline", URL, [f"[200] Data from {URL} (valid=True)"]),
    ("step1", "hello world", ["DLROW OLLEH"]),
    ("step1_explicit", "hello world", ["!!!DLROW OLLEH"]),
    # step2 and step3 build the same graph: each agent's reply is an output (the fake quotes it).
    ("writer_reviewer", SLOGAN, [f'excellent: You said "{SLOGAN}"'] * 2),
    # The fake fills a response_format's schema: is_spam true, reason "reason_value".
    (
        "edge_condition",
        "Subject: Team Meeting Follow-up",
        lambda t: t[-1] == "Email marked as spam: reason_value",
    ),
    ("state_with_agents", "You are a WINNER!", lambda t: t[-1] == "Email marked as spam: reason_value"),
    # spam_decision is its schema's first enum value, NotSpam: the email assistant drafts a reply.
    (
        "switch_case",
        "Hey there, our latest offer expires soon.",
        lambda t: t[-1] == "Email sent: response_value",
    ),
    (
        "multi_selection",
        LONG_EMAIL,
        lambda t: "Email sent: response_value" in t and '{"summary": "summary_value"}' in t,
    ),
    # An Enum start (NumberSignal); the judge's prompt quotes 'MATCHED', so the first guess wins.
    ("simple_loop", "init", lambda t: t[-1] == "Guessed the number: 50"),
    ("sequential_executors", "hello world", ["DLROW OLLEH"]),
    ("sequential_streaming", "hello world", ["DLROW OLLEH"]),
    # agent-framework 1.23-1.26's WorkflowAgent forwards intermediate outputs as they are.
    (
        "labelled_outputs",
        "life, the universe, and everything",
        [
            "plan: starting work on 'life, the universe, and everything'",
            "research: gathering data for 'life, the universe, and everything'",
            "final answer to 'life, the universe, and everything': 42",
        ],
    ),
    (
        "sub_basics",
        json.dumps(["Hello world! This is a simple test.", "Short text.", ""]),
        lambda t: (
            [(r["task_id"], r["word_count"], r["char_count"]) for r in json.loads(t[-1])]
            == [("task_1", 7, 35), ("task_2", 2, 11), ("task_3", 0, 0)]
        ),
    ),
    ("sub_interception", _email("user1@example.com"), ["true"]),
    ("sub_interception", _email(" user2@invalid"), ["false"]),
    (
        "kwargs_global",
        "Pull Contoso's Q3 2025 data.",
        lambda t: t[-1] == 'report: You said "Pull Contoso\'s Q3 2025 data."',
    ),
    (
        "kwargs_per_agent",
        "Pull Contoso's Q3 2025 data.",
        lambda t: t[-1] == 'report: You said "Pull Contoso\'s Q3 2025 data."',
    ),
    ("aggregate", "[1, 2, 3, 4]", lambda t: sorted(json.loads(t[-1])) == [2.5, 10]),
    ("map_reduce", "the cat and the dog\nand the bird", _word_counts),
]


@pytest.fixture(scope="module", autouse=True)
def _environment(fake: FakeModel, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The samples' `OpenAIChatClient()` reads the process environment (in-process servers); the
    map_reduce sample's files go to a directory of the test's own."""
    from tests.samples.upstream import map_reduce_and_visualization as map_reduce

    own_dir, map_reduce.TEMP_DIR = map_reduce.TEMP_DIR, str(tmp_path_factory.mktemp("map_reduce"))
    with environ(model_env(fake)):
        yield
    close_clients()
    map_reduce.TEMP_DIR = own_dir


@pytest.fixture(
    params=[
        pytest.param(d, marks=pytest.mark.xdist_group(f"functional-samples-{d}"))
        for d in ("sqlite", "postgresql")
    ]
)
def served(request: pytest.FixtureRequest, _server_pool: Any) -> InProcessServer:
    """The module's in-process server of the test's dialect, hosting every sample (`ALL`). Each
    dialect's tests run on one pytest-xdist worker (`--dist loadgroup`): one server start each."""
    srv: InProcessServer = _server_pool.get(request.param, ALL)
    return srv


def _events(srv: Any, response_id: str) -> list[dict[str, Any]]:
    return stream_events(srv.base_url, response_id, client=http())


def _stream(srv: Any, model: str, text: str) -> Any:
    client = openai_client(srv.base_url)
    with client.responses.stream(model=model, input=text, store=True) as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def _check(texts: list[str], expected: list[str] | Callable[[list[str]], None]) -> None:
    if callable(expected):
        assert expected(texts) is not False, texts
    else:
        assert texts == expected, texts


@pytest.mark.parametrize(("app", "text", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_sample_streams_what_its_workflow_yields_and_a_background_run_completes(
    served: InProcessServer, app: str, text: str, expected: Any
) -> None:
    srv = served
    final = _stream(srv, app, text)
    assert final.status == "completed", final.error
    check_sequence(_events(srv, final.id), label=app)
    _check(output_texts(final), expected)
    client = openai_client(srv.base_url)
    created = client.responses.create(model=app, input=text, background=True)
    done = wait_terminal(client, created.id, timeout=60)
    assert done.status == "completed", done.error
    _check(output_texts(done), expected)


def _post(c: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = c.post("/v1/responses", json={"store": True, **body})
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    assert data["status"] == "completed", data
    return data


def _calls(resp: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in resp["output"] if o["type"] == "function_call"]


def test_hitl_review_pauses_on_its_request_and_revises_with_the_answer_without_rewriting(
    served: InProcessServer, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = served
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _post(c, {"model": "review_pipeline", "input": "AI Safety"})
        (call,) = _calls(paused)
        args = json.loads(call["arguments"])
        assert args["request_id"] == "review_request", args
        assert args["data"]["draft"].startswith("Draft document about 'AI Safety'"), args
        done = _post(
            c,
            {
                "model": "review_pipeline",
                "previous_response_id": paused["id"],
                "input": [
                    {
                        "type": "function_call_output",
                        "call_id": call["call_id"],
                        "output": "More on alignment",
                    }
                ],
            },
        )
    check_sequence(_events(srv, done["id"]), label="answer")
    (text,) = [p["text"] for o in done["output"] if o["type"] == "message" for p in o["content"]]
    assert text.startswith("Revised: Draft document about 'AI Safety'") and "More on alignment" in text, text
    # @step: the draft written before the pause is answered from the checkpoint, not written again.
    assert capsys.readouterr().out.count("write_draft executing for 'AI Safety'") == 1


def test_sub_workflow_parallel_requests_pauses_on_the_requests_its_main_workflow_cannot_answer(
    served: InProcessServer,
) -> None:
    """Its cache-missed ResourceRequest and its security PolicyRequest; the others are answered
    inside. (Answering them is not hostable: the sample's executors keep the pending requests
    in instance memory, which a restore onto a fresh workflow, the framework's own too, loses.)"""
    srv = served
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _post(c, {"model": "sub_parallel", "input": json.dumps(REQUESTS)})
    data = sorted(
        (json.loads(call["arguments"])["data"] for call in _calls(paused)), key=lambda d: d["resource_type"]
    )
    assert [(d["resource_type"], d.get("priority"), d.get("policy_type")) for d in data] == [
        ("cpu", None, "security"),
        ("gpu", "high", None),
    ], data


def test_cancelling_the_cancellation_sample_mid_step_stops_it(
    served: InProcessServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cancelled during step2 (each step sleeps 2 s): the response ends `cancelled` with no
    output, its stream ends with `response.failed` (status cancelled), step2 never finishes."""
    srv = served
    client = openai_client(srv.base_url)
    started = time.monotonic()
    created = client.responses.create(model="cancellation", input="hello world", background=True)
    printed: list[str] = []
    wait_until(
        lambda: printed.append(capsys.readouterr().out) or "[Step2] Starting" in "".join(printed),
        timeout=30,
        message="step2 never started",
    )
    cancelled = client.responses.cancel(created.id)
    assert cancelled.status == "cancelled" and not cancelled.output, cancelled
    time.sleep(max(0.0, started + 4.5 - time.monotonic()))  # past the end step2 would have had
    printed.append(capsys.readouterr().out)
    assert "[Step2] Done" not in "".join(printed), printed
    assert client.responses.retrieve(created.id).status == "cancelled"
    events = _events(srv, created.id)
    check_sequence(events, label="cancelled")
    assert events[-1]["type"] == "response.failed" and events[-1]["response"]["status"] == "cancelled"
