"""How a client drives the human-in-the-loop samples (tests/samples/test_hitl_samples.py): the
first turn streamed through the official openai client, each answer a background turn read back
with GET, every event list checked (`check_sequence`); the answers as DESIGN.md names them."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from tests.samples.model import openai_client
from tests.support.responses import dump, output_texts, wait_terminal
from tests.support.sse import check_sequence, stream_events

Body = dict[str, Any]
# What a step sends, from the response it continues (None for the first turn).
Answer = Callable[[Body], list[dict[str, Any]] | str]


def items_of(resp: Body, kind: str) -> list[Body]:
    return [o for o in resp["output"] if o["type"] == kind]


def texts(resp: Body) -> list[str]:
    return output_texts(resp)


def message(text: str) -> Answer:
    """The user's next message (an empty one: "go on", which approves a held reply)."""
    return lambda _prev: text


def call_output(output: str | Callable[[Body], str]) -> Answer:
    """A `function_call_output` for the one `function_call` the previous response showed."""

    def answer(prev: Body) -> list[dict[str, Any]]:
        calls = items_of(prev, "function_call")
        assert len(calls) == 1, prev["output"]
        value = output(calls[0]) if callable(output) else output
        return [{"type": "function_call_output", "call_id": calls[0]["call_id"], "output": value}]

    return answer


def approve_all(prev: Body) -> list[dict[str, Any]]:
    """An `mcp_approval_response` approving every `mcp_approval_request` shown."""
    requests = items_of(prev, "mcp_approval_request")
    assert requests, prev["output"]
    return [
        {"type": "mcp_approval_response", "approval_request_id": r["id"], "approve": True} for r in requests
    ]


def request_data(prev: Body) -> Any:
    """The data of the one `request_info` call a paused workflow shows."""
    (call,) = items_of(prev, "function_call")
    assert call["name"] == "request_info", call
    return json.loads(call["arguments"])["data"]


# A check raises, or returns a value whose falsity fails the step (a predicate); None passes.
Check = Callable[[Body], Any]


def applied(check: Check, resp: Body) -> None:
    verdict = check(resp)
    assert verdict is None or verdict, (verdict, resp["output"])


@dataclass
class Step:
    answer: Answer
    check: Check


@dataclass
class Flow:
    """A sample's conversation: its first input, then each answer, each with its check."""

    model: str
    first: str
    check_first: Check
    steps: Sequence[Step] = field(default_factory=tuple)


def streamed(client: openai.OpenAI, model: str, input: Any, **kwargs: Any) -> Body:
    """A turn streamed with the openai client's stream helper; its events are a valid sequence."""
    with client.responses.stream(model=model, input=input, store=True, **kwargs) as stream:
        events = [dump(e) for e in stream]
        final = dump(stream.get_final_response())
    check_sequence(events, label=final["id"])
    return final


def background(client: openai.OpenAI, base_url: str, model: str, input: Any, **kwargs: Any) -> Body:
    """A background turn read back with GET (polled, then its full replay checked)."""
    created = client.responses.create(model=model, input=input, background=True, **kwargs)
    final = dump(wait_terminal(client, created.id, timeout=60))
    check_sequence(stream_events(base_url, created.id), label=created.id)
    return final


def completed(resp: Body) -> Body:
    assert resp["status"] == "completed", resp.get("error")
    return resp


def run_flow(
    base_url: str, flow: Flow, *, resp: Body | None = None, start: int = 0, stop: int | None = None
) -> Body:
    """The first turn streamed (unless `resp`, the response to continue, is given), then the
    answers `steps[start:stop]`, each a background continuation; every check applied."""
    client = openai_client(base_url)
    if resp is None:
        resp = completed(streamed(client, flow.model, flow.first))
        applied(flow.check_first, resp)
    if not flow.steps:  # nothing to answer: the same first turn in the background, read back
        applied(flow.check_first, completed(background(client, base_url, flow.model, flow.first)))
    for step in flow.steps[start:stop]:
        resp = completed(
            background(client, base_url, flow.model, step.answer(resp), previous_response_id=resp["id"])
        )
        applied(step.check, resp)
    return resp
