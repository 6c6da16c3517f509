"""End-to-end tests of continuations: replies to paused workflows, tool outputs, item references.

Each test is named after a bug a black-box probe found; each runs on SQLite and PostgreSQL against
this module's shared in-process servers (one per dialect, app and settings). The rule they share: an input the run would fail on is refused with a 4xx
(the standard error body, naming the problem and what to do) before any response is created, and a
refused reply marks nothing answered.

The typed human-in-the-loop app below is served from this module (``--app
tests.e2e.test_continuations:typed_hitl``); its dataclass and pydantic types are allowed in
checkpoints through ``DURABLE_RESPONSES_CHECKPOINT_TYPES``, as an application would.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from agent_framework import (
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from pydantic import BaseModel

from tests.support import db
from tests.support.inprocess import InProcessServer
from tests.support.responses import assert_error_shape, retrieve
from tests.support.waits import wait_until

APPROVAL = "durable_responses.examples.approval:approval"
ECHO_AGENT = "durable_responses.examples.echo_agent:echo_agent"
TYPED_HITL = "tests.e2e.test_continuations:typed_hitl"
TYPED_TYPES = "tests.e2e.test_continuations:Ticket,tests.e2e.test_continuations:Form"
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]


# region typed human-in-the-loop app


@dataclass
class Ticket:
    title: str
    priority: int


class Form(BaseModel):
    name: str
    age: int


_RESPONSE_TYPES: dict[str, Any] = {
    "int": int,
    "bool": bool,
    "float": float,
    "ticket": Ticket,
    "form": Form,
    "str": str,
}


class _Asker(Executor):
    """Asks for a value of the type named by the user's text; yields what it got, with its type."""

    def __init__(self) -> None:
        super().__init__(id="asker")

    @handler
    async def ask(self, messages: list[Message], ctx: WorkflowContext[str, str]) -> None:
        kind = (messages[-1].text or "").strip() if messages else ""
        await ctx.request_info(request_data=f"Give me a {kind}", response_type=_RESPONSE_TYPES[kind])

    async def _got(self, answer: Any, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"got {type(answer).__name__} {answer!r}")

    @response_handler
    async def got_int(self, original: str, answer: int, ctx: WorkflowContext[str, str]) -> None:
        await self._got(answer, ctx)

    @response_handler
    async def got_bool(self, original: str, answer: bool, ctx: WorkflowContext[str, str]) -> None:
        await self._got(answer, ctx)

    @response_handler
    async def got_float(self, original: str, answer: float, ctx: WorkflowContext[str, str]) -> None:
        await self._got(answer, ctx)

    @response_handler
    async def got_ticket(self, original: str, answer: Ticket, ctx: WorkflowContext[str, str]) -> None:
        await self._got(answer, ctx)

    @response_handler
    async def got_form(self, original: str, answer: Form, ctx: WorkflowContext[str, str]) -> None:
        await self._got(answer, ctx)

    @response_handler
    async def got_str(self, original: str, answer: str, ctx: WorkflowContext[str, str]) -> None:
        await self._got(answer, ctx)


def typed_hitl() -> Workflow:
    asker = _Asker()
    return WorkflowBuilder(name="typed-hitl", start_executor=asker, output_from=[asker]).build()


# endregion

# region helpers


def _post(c: httpx.Client, body: dict[str, Any], **headers: str) -> httpx.Response:
    return c.post("/responses", json={"model": "m", **body}, headers=headers)


def _ok(c: httpx.Client, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    r = _post(c, body, **headers)
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    return data


def _calls(resp: dict[str, Any]) -> list[str]:
    return [o["call_id"] for o in resp["output"] if o["type"] == "function_call"]


def _texts(resp: dict[str, Any]) -> list[str]:
    return [
        "".join(p.get("text", "") for p in o["content"]) for o in resp["output"] if o["type"] == "message"
    ]


def _reply(call_id: str, output: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


# endregion


def test_text_continuing_an_answered_pause_is_refused_up_front(shared_servers: Any) -> None:
    """Bug 1: text sent to a pause whose call was already answered failed at run time (HTTP 200,
    status failed, AgentInvalidResponseException). Now: 409 call_already_answered naming the
    answering response; and text to a pause still waiting is a 400 pending_request."""
    srv: InProcessServer = shared_servers(APPROVAL)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _ok(c, {"input": "deploy"})
        (call_id,) = _calls(paused)

        # Still waiting: text is refused, naming the call to answer.
        err = assert_error_shape(_post(c, {"previous_response_id": paused["id"], "input": "hello"}), 400)
        assert err["code"] == "pending_request" and call_id in err["message"], err
        assert "function_call_output" in err["message"]

        answer = _ok(c, {"previous_response_id": paused["id"], "input": [_reply(call_id, "yes")]})
        assert answer["status"] == "completed" and _texts(answer) == ["Completed with decision: yes"]

        # Answered: text (and an empty input) to the pause is a 409 that points at the answer.
        for body in ({"input": "hello again"}, {"input": [{"role": "user", "content": "hi"}]}):
            r = _post(c, {"previous_response_id": paused["id"], **body})
            err = assert_error_shape(r, 409)
            assert err["code"] == "call_already_answered", err
            assert err["param"] == "previous_response_id"
            assert answer["id"] in err["message"] and call_id in err["message"], err
        # What the error suggests works: continuing from the answer starts a new turn.
        again = _ok(c, {"previous_response_id": answer["id"], "input": "ship it"})
        assert again["status"] == "completed" and len(_calls(again)) == 1, again


def test_reply_with_an_extra_message_to_a_paused_workflow_is_refused(shared_servers: Any) -> None:
    """Bug 2: [function_call_output, user message] to a pause failed at run time. Now: 400 naming
    the offending item, and the call stays unanswered (the plain reply still works)."""
    srv: InProcessServer = shared_servers(APPROVAL)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _ok(c, {"input": "deploy"})
        (call_id,) = _calls(paused)
        for extra, pos in (
            ([_reply(call_id, "yes"), {"role": "user", "content": "extra"}], 1),
            ([{"role": "user", "content": "first"}, _reply(call_id, "yes")], 0),
            (
                [
                    {"type": "function_call", "call_id": call_id, "name": "request_info", "arguments": "{}"},
                    _reply(call_id, "yes"),
                ],
                0,
            ),
        ):
            r = _post(c, {"previous_response_id": paused["id"], "input": extra})
            err = assert_error_shape(r, 400)
            assert err["code"] == "pending_request" and err["param"] == f"input[{pos}]", err
            assert "only function_call_output items" in err["message"], err
        # Nothing was marked answered: the reply alone goes through, once.
        answer = _ok(c, {"previous_response_id": paused["id"], "input": [_reply(call_id, "yes")]})
        assert answer["status"] == "completed" and _texts(answer) == ["Completed with decision: yes"]


def test_request_info_with_a_non_str_response_type_can_be_answered(shared_servers: Any) -> None:
    """Bug 3: a request_info with response_type int / bool / float / dataclass / pydantic model could
    never be answered (the wire carries a string; the framework refused it at run time). Now the
    host converts the output to the declared type, or answers 400 naming that type up front."""
    srv: InProcessServer = shared_servers(TYPED_HITL, env={"DURABLE_RESPONSES_CHECKPOINT_TYPES": TYPED_TYPES})
    good = [
        ("int", "42", "got int 42"),
        ("bool", "true", "got bool True"),
        ("float", "3", "got float 3.0"),
        (
            "ticket",
            '{"title": "disk full", "priority": 2}',
            "got Ticket Ticket(title='disk full', priority=2)",
        ),
        ("form", '{"name": "Ada", "age": 36}', "got Form Form(name='Ada', age=36)"),
        ("str", "plain text", "got str 'plain text'"),
        ("str", [{"type": "input_text", "text": "from parts"}], "got str 'from parts'"),
    ]
    bad = {
        "int": ["not a number", "4.5", "true"],
        "bool": ["yes"],
        "ticket": ['{"title": "x"}', "[1]"],
        "form": ['{"name": "Ada", "age": "old"}'],
    }
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        for kind, output, expected in good:
            paused = _ok(c, {"input": kind})
            (call_id,) = _calls(paused)
            for wrong in bad.get(kind, []):
                r = _post(c, {"previous_response_id": paused["id"], "input": [_reply(call_id, wrong)]})
                err = assert_error_shape(r, 400)
                assert err["code"] == "invalid_function_call_output", err
                assert err["param"] == "input[0].output", err
                name = {"ticket": "Ticket", "form": "Form"}.get(kind, kind)
                assert f"expects a value of type {name} " in err["message"], err
            # A refused reply answered nothing: the right one goes through.
            answer = _ok(c, {"previous_response_id": paused["id"], "input": [_reply(call_id, output)]})
            assert answer["status"] == "completed", answer
            assert _texts(answer) == [expected], answer
        # Streaming and background answers are converted the same way.
        paused = _ok(c, {"input": "int"})
        (call_id,) = _calls(paused)
        r = _post(
            c,
            {"previous_response_id": paused["id"], "input": [_reply(call_id, "7")], "stream": True},
        )
        assert r.status_code == 200 and "got int 7" in r.text and "response.completed" in r.text, r.text


def test_function_call_output_for_an_unknown_call_is_refused_on_a_plain_agent(shared_servers: Any) -> None:
    """Bug 4 (plain agent): a function_call_output for a call_id no function_call has was fed to the
    model. Now: 400 "No tool call found for function call output with call_id ...", param input."""
    srv: InProcessServer = shared_servers(ECHO_AGENT)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        first = _ok(c, {"input": "call get_weather", "tools": TOOLS})
        (call_id,) = _calls(first)
        later = _ok(c, {"previous_response_id": first["id"], "input": "more", "tools": TOOLS})
        for body in (
            {"previous_response_id": first["id"], "input": [_reply("call_bogus", "42")]},
            {"input": [_reply(call_id, "42")]},  # no history to find it in
            {"previous_response_id": later["id"], "input": [_reply(call_id, "1"), _reply("call_x", "2")]},
        ):
            err = assert_error_shape(_post(c, {**body, "tools": TOOLS}), 400)
            assert err["param"] == "input" and err["code"] == "unknown_call_id", err
            assert err["message"].startswith("No tool call found for function call output with call_id "), err
        # Valid: the call is in the previous response's output, or further back in its history ...
        for prev in (first["id"], later["id"]):
            ok = _ok(c, {"previous_response_id": prev, "input": [_reply(call_id, "sunny")], "tools": TOOLS})
            assert ok["status"] == "completed", ok
        # ... or in the same input (a client that keeps its own history).
        call = {"type": "function_call", "call_id": "call_local", "name": "get_weather", "arguments": "{}"}
        ok = _ok(c, {"input": [call, _reply("call_local", "sunny")], "tools": TOOLS})
        assert ok["status"] == "completed", ok
        # Another tenant's history does not hold it.
        other = _post(
            c,
            {"previous_response_id": first["id"], "input": [_reply(call_id, "x")]},
            **{"x-agent-user-id": "someone-else"},
        )
        assert_error_shape(other, 404)


def test_function_call_output_without_a_paused_workflow_is_refused(shared_servers: Any) -> None:
    """Bug 4 (workflow): a function_call_output with no previous_response_id was accepted. Now a 400
    naming the call, and a reply to a workflow response that is not paused is one too."""
    srv: InProcessServer = shared_servers(APPROVAL)
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _ok(c, {"input": "deploy"})
        (call_id,) = _calls(paused)
        err = assert_error_shape(_post(c, {"input": [_reply(call_id, "yes")]}), 400)
        assert err["param"] == "input" and err["code"] == "unknown_call_id", err
        assert err["message"].startswith(
            f"No tool call found for function call output with call_id {call_id}"
        )
        answer = _ok(c, {"previous_response_id": paused["id"], "input": [_reply(call_id, "yes")]})
        assert answer["status"] == "completed"
        # `answer` finished the workflow: it waits for nothing.
        err = assert_error_shape(
            _post(c, {"previous_response_id": answer["id"], "input": [_reply(call_id, "again")]}), 400
        )
        assert err["code"] == "unknown_call_id" and answer["id"] in err["message"], err


def test_item_reference_input_items_are_resolved(shared_servers: Any) -> None:
    """Bug 5: item_reference input items were silently dropped. Now they resolve to the stored input
    or output item of the same user's response; an unknown (or another tenant's) id is a 404."""
    srv: InProcessServer = shared_servers(ECHO_AGENT)
    alice = {"x-agent-user-id": "alice"}
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        first = _ok(c, {"input": "hello there"}, **alice)
        assert _texts(first) == ["echo: hello there (turn 1)"]
        items = c.get(f"/responses/{first['id']}/input_items", headers=alice).json()["data"]
        input_id = items[0]["id"]
        output_id = first["output"][0]["id"]

        # A reference alone: the model sees the referenced user message.
        ref = _ok(c, {"input": [{"type": "item_reference", "id": input_id}]}, **alice)
        assert _texts(ref) == ["echo: hello there (turn 1)"], ref
        # The bare form ({"id": ...}) too, mixed with new items: history in order.
        mixed = _ok(
            c,
            {
                "input": [
                    {"id": input_id},
                    {"type": "item_reference", "id": output_id},
                    {"role": "user", "content": "and now?"},
                ]
            },
            **alice,
        )
        assert _texts(mixed) == ["echo: and now? (turn 2)"], mixed
        # The response keeps the reference as sent ...
        stored = c.get(f"/responses/{mixed['id']}/input_items", params={"order": "asc"}, headers=alice)
        assert stored.json()["data"][0] == {"type": "item_reference", "id": input_id}
        # ... and a later turn's history resolves it again.
        follow = _ok(c, {"previous_response_id": ref["id"], "input": "next"}, **alice)
        assert _texts(follow) == ["echo: next (turn 2)"], follow

        # Unknown ids and another tenant's ids: 404, the same answer for both.
        for user, ref_id in (("alice", "msg_doesnotexist"), ("mallory", input_id), ("mallory", output_id)):
            r = _post(c, {"input": [{"type": "item_reference", "id": ref_id}]}, **{"x-agent-user-id": user})
            err = assert_error_shape(r, 404)
            assert err["param"] == "input" and ref_id in err["message"], err
        # store=false requests resolve references the same way.
        nostore = _ok(c, {"input": [{"type": "item_reference", "id": input_id}], "store": False}, **alice)
        assert _texts(nostore) == ["echo: hello there (turn 1)"]


def test_item_reference_is_resolved_for_a_workflow(shared_server: InProcessServer) -> None:
    """Bug 5 on the default (workflow) app: the referenced message reaches the workflow."""
    with httpx.Client(base_url=shared_server.base_url, timeout=60) as c:
        user = {"x-agent-user-id": f"u-{uuid.uuid4().hex[:6]}"}
        first = _ok(c, {"input": "hello big world"}, **user)
        item_id = c.get(f"/responses/{first['id']}/input_items", headers=user).json()["data"][0]["id"]
        again = _ok(c, {"input": [{"type": "item_reference", "id": item_id}]}, **user)
        assert _texts(again) == _texts(first) and _texts(first), (first, again)


COUNTDOWN = "durable_responses.examples.countdown:countdown"


def test_conversation_turn_after_a_cancelled_turn_continues_the_last_finished_one(
    shared_servers: Any,
) -> None:
    """Regression: a conversation continued from the newest checkpoint of its lineage, which
    could be a cancelled (or failed) turn's: the next turn first replayed the stopped turn's
    remaining supersteps. And the stopped turn's end pruned the finished turn's checkpoint."""
    srv: InProcessServer = shared_servers(COUNTDOWN)
    conv = {"conversation": f"conv_{uuid.uuid4().hex}"}
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        t1 = _ok(c, {"model": "m", "input": "1 delay=0", **conv})
        assert _texts(t1) == ["tick 1", "tick 0"]
        t2 = _ok(c, {"model": "m", "input": "30 delay=0.1", "background": True, **conv})
        # A completed output item is committed with the checkpoint after it: two of them, and
        # the cancelled turn has checkpoints of its own that the next turn must not continue.
        wait_until(lambda: len(_texts(retrieve(srv, t2["id"]))) >= 2, 10)
        assert c.post(f"/responses/{t2['id']}/cancel").json()["status"] == "cancelled"
        t3 = _ok(c, {"model": "m", "input": "2 delay=0", **conv})
        assert _texts(t3) == ["tick 2", "tick 1", "tick 0"], _texts(t3)


RECORDING_COUNTDOWN = "tests.apps.workflows:recording_countdown"


def _responses_of(srv: InProcessServer, user: str) -> int:
    return int(
        db.scalar(srv.database_url, f"SELECT count(*) FROM responses WHERE user_id = {db.quote(user)}")
    )


def _drop_checkpoints(srv: InProcessServer, *response_ids: str) -> None:
    ids = ", ".join(db.quote(r) for r in response_ids)
    db.execute(srv.database_url, f"DELETE FROM checkpoints WHERE response_id IN ({ids})")
    assert db.scalar(srv.database_url, f"SELECT count(*) FROM checkpoints WHERE response_id IN ({ids})") == 0


def test_a_turn_whose_checkpoint_is_gone_is_refused_not_restarted(
    shared_servers: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    """Invariant 7 (fail closed): a workflow turn continuing a response (or a conversation) whose
    checkpoint rows are gone gets a 409 `checkpoint_not_found`; the workflow is never started
    again from its entry executor, and no response is created."""
    record = tmp_path / "calls.jsonl"
    monkeypatch.setenv("RECORD_RUN_CALLS", str(record))  # read by the app, in this process
    srv: InProcessServer = shared_servers(RECORDING_COUNTDOWN)
    user = {"x-agent-user-id": f"u-{uuid.uuid4().hex[:8]}"}
    conv = f"conv_{uuid.uuid4().hex}"
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        t1 = _ok(c, {"input": "1 delay=0"}, **user)
        c1 = _ok(c, {"input": "1 delay=0", "conversation": conv}, **user)
        assert _texts(t1) == _texts(c1) == ["tick 1", "tick 0"]
        # While their checkpoints exist, both continue (restored from the checkpoint).
        t2 = _ok(c, {"input": "2 delay=0", "previous_response_id": t1["id"]}, **user)
        c2 = _ok(c, {"input": "2 delay=0", "conversation": conv}, **user)
        assert _texts(t2) == _texts(c2) == ["tick 2", "tick 1", "tick 0"]
        runs = [json.loads(line) for line in record.read_text().splitlines()]
        assert len(runs) == 4 and all(r["checkpoint_id"] for r in runs[2:]), runs
        _drop_checkpoints(srv, t1["id"], c1["id"], c2["id"])
        created = _responses_of(srv, user["x-agent-user-id"])
        for link, param in (
            ({"previous_response_id": t1["id"]}, "previous_response_id"),
            ({"conversation": conv}, "conversation"),
        ):
            for mode in ({}, {"stream": True}, {"background": True}):
                r = _post(c, {**link, **mode, "input": "3 delay=0"}, **user)
                err = assert_error_shape(r, 409)
                assert err["code"] == "checkpoint_not_found" and err["param"] == param, (link, mode, err)
                assert "cannot be continued" in err["message"], err
        # Nothing ran: no call of the app's run(), no response created.
        assert len(record.read_text().splitlines()) == len(runs)
        assert _responses_of(srv, user["x-agent-user-id"]) == created


def test_a_reply_to_a_pause_whose_checkpoint_is_gone_is_refused_and_answers_nothing(
    shared_servers: Any,
) -> None:
    """The same for a paused workflow: the reply is refused (409 `checkpoint_not_found`), the
    pending request stays pending, and nothing is created or restarted."""
    srv: InProcessServer = shared_servers(APPROVAL)
    user = {"x-agent-user-id": f"u-{uuid.uuid4().hex[:8]}"}
    with httpx.Client(base_url=srv.base_url, timeout=60) as c:
        paused = _ok(c, {"input": "deploy"}, **user)
        (call_id,) = _calls(paused)
        _drop_checkpoints(srv, paused["id"])
        created = _responses_of(srv, user["x-agent-user-id"])
        for mode in ({}, {"stream": True}, {"background": True}):
            r = _post(
                c, {"previous_response_id": paused["id"], "input": [_reply(call_id, "yes")], **mode}, **user
            )
            err = assert_error_shape(r, 409)
            assert err["code"] == "checkpoint_not_found" and err["param"] == "previous_response_id", err
        assert _responses_of(srv, user["x-agent-user-id"]) == created
        status = db.scalar(
            srv.database_url,
            f"SELECT status FROM pending_requests WHERE response_id = {db.quote(paused['id'])} "
            f"AND call_id = {db.quote(call_id)}",
        )
        assert status == "pending"
