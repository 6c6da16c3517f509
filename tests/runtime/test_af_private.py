"""Tests for durable_responses.runtime._af_private and pending.py: the restore fix, checkpoint encoding, pending
requests.

These pin agent-framework-core 1.23.0 behaviour the host relies on; a failure after an upgrade means:
re-verify the restore bug (the module docstring) and the measured facts below, then update both.

Measured on 1.23.0 (the tests below keep these true)
----------------------------------------------------
- A restored run (``checkpoint_id`` + ``checkpoint_storage``) DOES save a checkpoint after every
  superstep it runs (the storage is installed as the run's runtime storage), chained to the restored
  checkpoint via ``previous_checkpoint_id``. It writes no entry checkpoint before its first superstep.
  Restoring a checkpoint with no queued messages (e.g. a pause checkpoint) still runs one empty
  superstep and saves one checkpoint (pending requests unchanged), a superstep that counts against
  ``max_iterations``. So the mixin answers a pause on a fresh instance (restore + function results)
  in one ``Workflow.run(checkpoint_id=..., responses=...)``, as the framework resumes a pause itself:
  it saves one entry checkpoint when the responses are delivered (the answers queued, before any
  executor runs), then one per superstep. ("a restore writes no checkpoint" holds only for the
  entry checkpoint.)
- ``function_invocation_kwargs`` / ``client_kwargs`` passed to a restore are accepted, but the restore
  then imports the checkpoint's state, so the restored supersteps run with the kwargs the ORIGINAL run
  stored in the checkpoint. The input phase (new message or responses) uses the ones passed.
- Timing with ``agent.run(stream=True)``: the stream is pull-based. ``save(C_k)`` is called inside the
  consumer's ``__anext__`` that follows the LAST update of superstep k, i.e. only after the host has
  taken every update of superstep k, and before any update of superstep k+1 exists. This holds for
  first runs and restored runs (through the mixin) alike. So a host ``save()`` may commit the
  buffered outputs of superstep k together with C_k in one transaction. (Executors of superstep k
  may finish before the host has taken its updates, which wait in the runner's event queue; only
  the save and the start of superstep k+1 wait for the consumer.)
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import hashlib
import importlib
import inspect
import json
import logging
from pathlib import Path
from typing import Any, Never

import pytest
from agent_framework import (
    Content,
    Executor,
    InMemoryCheckpointStorage,
    Message,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowContext,
    WorkflowEvent,
    handler,
    response_handler,
)

from durable_responses.examples.approval import approval_agent
from durable_responses.examples.countdown import countdown, countdown_agent
from durable_responses.runtime._af_private import (
    RUN_CORE_PARAMETERS,
    VERIFIED_RELEASES,
    CheckpointTypeRefused,
    check_compatibility,
    coerce_request_response,
    decode_checkpoint,
    encode_checkpoint,
    make_restorable,
    on_events_end,
    pace_events,
    unverified_release,
)
from durable_responses.runtime.pauses.pending import (
    clean_request_info_arguments,
    pending_request_ids,
    pending_request_payloads,
    pending_response_types,
)
from tests.apps.workflows import FinalResponseProbe
from tests.support.framework import AF_CORE, NEWEST, OLDEST

# Per verified agent-framework-core release, sha256 of inspect.getsource of the WorkflowAgent
# methods `_af_private` overrides (`_run_core`, `_convert_workflow_event_to_agent_response_updates`)
# or calls (`_extract_function_responses`).
PINNED_SOURCES: dict[str, dict[str, str]] = {
    "1.23.0": {
        "_run_core": "8b4d52da7c238dc03198a1ff6e5396564e759959317c5bee6aaa1f7027a4cd4e",
        "_convert_workflow_event_to_agent_response_updates": (
            "ac1211322e909196b2563ef6f639a860bd7739d7355c72ea33d50ef5d501d2e2"
        ),
        "_extract_function_responses": "b9430951762ffe9870c16e9028f7d91a4c5ef3d097ccd6b4cb09d4743a0b1c1b",
    },
    "1.26.0": {
        "_run_core": "8b4d52da7c238dc03198a1ff6e5396564e759959317c5bee6aaa1f7027a4cd4e",
        "_convert_workflow_event_to_agent_response_updates": (
            "3d895202c56e2d7bfa56ca59769db6d37d46cc9e4fd3698e988b1a4b1a0857e5"
        ),
        "_extract_function_responses": "b9430951762ffe9870c16e9028f7d91a4c5ef3d097ccd6b4cb09d4743a0b1c1b",
    },
}
UPGRADE_HINT = (
    f"agent_framework's WorkflowAgent changed in agent-framework-core {AF_CORE}, which "
    "server/runtime/_af_private/ was not written against (see README, 'Supported agent-framework "
    "releases'). Re-verify the restore bug (#7677: a checkpoint restore discards its "
    "events) against the new source, update _RestoreForwardingMixin._run_core to match the new "
    "signature/behaviour (or drop it if upstream fixed the bug), re-measure the facts in the module "
    "docstring, then update the pinned values in this test."
)


@pytest.fixture(autouse=True)
def _quiet_self_loop_warning() -> Any:
    # The countdown's self-edge is intended; the builder warns about every self-loop.
    logging.getLogger("agent_framework").setLevel(logging.ERROR)
    yield


class RecordingStorage(InMemoryCheckpointStorage):
    """In-memory storage that logs each save into a shared timeline."""

    def __init__(self, timeline: list[tuple[str, Any]] | None = None) -> None:
        super().__init__()
        self.timeline: list[tuple[str, Any]] = timeline if timeline is not None else []
        self.saved: list[WorkflowCheckpoint] = []

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        self.timeline.append(("save", checkpoint.checkpoint_id))
        self.saved.append(checkpoint)
        return await super().save(checkpoint)


async def _run_countdown_with_checkpoints(n: int) -> tuple[RecordingStorage, list[str]]:
    storage = RecordingStorage()
    agent = countdown_agent()
    texts: list[str] = []
    async for update in agent.run(f"{n} delay=0", stream=True, checkpoint_storage=storage):
        storage.timeline.append(("update", update.text))
        texts.append(update.text)
    return storage, texts


def _checkpoint_after_tick(storage: RecordingStorage, tick: int) -> WorkflowCheckpoint:
    """The checkpoint saved right after the superstep that yielded "tick {tick}"."""
    timeline = storage.timeline
    for i, (kind, value) in enumerate(timeline):
        if kind == "update" and value == f"tick {tick}":
            save_id = next(v for k, v in timeline[i + 1 :] if k == "save")
            return next(cp for cp in storage.saved if cp.checkpoint_id == save_id)
    raise AssertionError(f"tick {tick} not found")


# region (1) pinned upstream internals


def test_run_core_signature_is_pinned() -> None:
    params = tuple(inspect.signature(WorkflowAgent._run_core).parameters)
    assert params == RUN_CORE_PARAMETERS, f"{UPGRADE_HINT} Parameters now: {params}"


def test_the_installed_release_is_a_verified_one() -> None:
    assert set(PINNED_SOURCES) == set(VERIFIED_RELEASES)
    assert (OLDEST, NEWEST) == (VERIFIED_RELEASES[0], VERIFIED_RELEASES[-1])
    assert AF_CORE in VERIFIED_RELEASES, UPGRADE_HINT
    assert unverified_release() is None


@pytest.mark.parametrize(
    "method",
    ["_run_core", "_convert_workflow_event_to_agent_response_updates", "_extract_function_responses"],
)
def test_overridden_sources_are_pinned_for_the_installed_release(method: str) -> None:
    digest = hashlib.sha256(inspect.getsource(getattr(WorkflowAgent, method)).encode("utf-8")).hexdigest()
    assert digest == PINNED_SOURCES.get(AF_CORE, {}).get(method), (
        f"{UPGRADE_HINT} New {method} source sha256: {digest}"
    )


def test_an_unverified_release_is_named_at_start_up(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from durable_responses.runtime import _af_private

    monkeypatch.setattr(_af_private.compat, "VERIFIED_RELEASES", ("0.0.1",))
    with caplog.at_level(logging.WARNING, logger="durable_responses.runtime"):
        check_compatibility()
    assert f"agent-framework-core {AF_CORE} is not one of the releases" in caplog.text


def test_check_compatibility_fails_loudly_on_a_changed_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    def changed(self: Any, event: Any) -> Any:
        return []

    monkeypatch.setattr(WorkflowAgent, "_convert_workflow_event_to_agent_response_updates", changed)
    with pytest.raises(RuntimeError, match=r"_convert_workflow_event_to_agent_response_updates parameters"):
        check_compatibility()


def test_check_compatibility_passes_on_pinned_version() -> None:
    check_compatibility()


def _private_framework_imports(path: Path) -> list[str]:
    """The private agent-framework names a module imports (`from agent_framework._x import y`,
    `from agent_framework import _y`): module paths with a private part, or private names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith("agent_framework")
        ):
            module = node.module or ""
            for alias in node.names:
                if any(part.startswith("_") for part in module.split(".")) or alias.name.startswith("_"):
                    found.append(f"{module}:{alias.name}")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("agent_framework._")]
    return found


def test_private_framework_names_are_imported_in_the_private_package_only() -> None:
    """The single home of agent-framework's private names is `runtime/_af_private/`; each one it
    imports exists in the installed release (its other private names, the methods it overrides and
    attributes it reads, are checked by `check_compatibility` and pinned above)."""
    import durable_responses

    root = Path(durable_responses.__file__).parent
    package = root / "runtime" / "_af_private"
    outside = {
        str(path.relative_to(root)): names
        for path in root.rglob("*.py")
        if package not in path.parents and (names := _private_framework_imports(path))
    }
    assert outside == {}, outside
    used = sorted({name for path in package.glob("*.py") for name in _private_framework_imports(path)})
    assert used, "the private package imports no private name: this test no longer looks at the right place"
    for entry in used:
        module, _, name = entry.partition(":")
        assert hasattr(importlib.import_module(module), name), (
            f"{entry} is gone in agent-framework-core {AF_CORE}"
        )


def test_check_compatibility_fails_loudly_on_a_changed_run_core(monkeypatch: pytest.MonkeyPatch) -> None:
    async def changed(self: Any, input_messages: Any, checkpoint_id: Any) -> Any:
        yield None

    monkeypatch.setattr(WorkflowAgent, "_run_core", changed)
    with pytest.raises(RuntimeError, match=r"_run_core parameters.*Re-verify the restore bug"):
        check_compatibility()


def test_check_compatibility_fails_loudly_on_a_changed_answer_conversion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def changed(self: Any, input_messages: Any) -> Any:
        return {}

    monkeypatch.setattr(WorkflowAgent, "_extract_function_responses", changed)
    with pytest.raises(RuntimeError, match=r"_extract_function_responses parameters"):
        check_compatibility()


def test_make_restorable_rejects_other_agents() -> None:
    from durable_responses.examples.echo_agent import echo_agent

    with pytest.raises(TypeError):
        make_restorable(echo_agent())  # type: ignore[arg-type]


# endregion

# region (2) countdown restore and save timing


async def test_restore_yields_remaining_ticks_once_and_unpatched_agent_yields_none() -> None:
    timeline: list[tuple[str, Any]] = []
    storage = RecordingStorage(timeline)
    first = countdown_agent()
    async for update in first.run("4 delay=0", stream=True, checkpoint_storage=storage):
        timeline.append(("update", update.text))
    assert [v for k, v in timeline if k == "update"] == ["tick 4", "tick 3", "tick 2", "tick 1", "tick 0"]
    middle = _checkpoint_after_tick(storage, 3)

    # The bug, documented: an unpatched fresh agent drains the queued work and yields nothing.
    unpatched = countdown_agent()
    lost = [
        u.text
        async for u in unpatched.run(
            stream=True, checkpoint_id=middle.checkpoint_id, checkpoint_storage=storage
        )
    ]
    assert lost == []

    fresh = make_restorable(countdown_agent())
    texts = [
        u.text
        async for u in fresh.run(stream=True, checkpoint_id=middle.checkpoint_id, checkpoint_storage=storage)
    ]
    assert texts == ["tick 2", "tick 1", "tick 0"]


async def test_restore_accepts_invocation_kwargs_but_keeps_the_checkpointed_ones() -> None:
    """Measured on 1.23.0: the restore imports the checkpoint's state after the run stored its kwargs,
    so the restored supersteps run with the ORIGINAL run's kwargs; the ones passed are accepted."""
    storage = RecordingStorage()
    original = {"trace": "orig"}
    async for _ in countdown_agent().run(
        "2 delay=0", stream=True, checkpoint_storage=storage, function_invocation_kwargs=original
    ):
        pass
    middle = storage.saved[2]  # entry, start superstep, after "tick 2"
    agent = make_restorable(countdown_agent())
    texts = [
        u.text
        async for u in agent.run(
            stream=True,
            checkpoint_id=middle.checkpoint_id,
            checkpoint_storage=storage,
            function_invocation_kwargs={"trace": "new"},
            client_kwargs={"temperature": 0},
        )
    ]
    assert texts == ["tick 1", "tick 0"]
    kwargs = storage.saved[-1].state["_workflow_run_kwargs"]
    assert kwargs == {"function_invocation_kwargs": {"__global__": original}}


async def test_restore_non_streaming() -> None:
    storage, _ = await _run_countdown_with_checkpoints(3)
    middle = _checkpoint_after_tick(storage, 2)
    agent = make_restorable(countdown_agent())
    response = await agent.run(checkpoint_id=middle.checkpoint_id, checkpoint_storage=storage)
    assert [m.text for m in response.messages] == ["tick 1", "tick 0"]


async def test_save_is_called_after_every_update_of_its_superstep() -> None:
    """save(C_k) happens inside the __anext__ after superstep k's last update, on first and restored runs."""
    timeline: list[tuple[str, Any]] = []
    storage = RecordingStorage(timeline)
    agent = countdown_agent()
    async for update in agent.run("3 delay=0", stream=True, checkpoint_storage=storage):
        timeline.append(("update", update.text))
    # Entry checkpoint, a silent start superstep, then one checkpoint right after each tick.
    assert [k for k, _ in timeline] == ["save", "save"] + ["update", "save"] * 4
    by_id = {cp.checkpoint_id: cp for cp in storage.saved}
    tick_3_cp = by_id[timeline[3][1]]
    assert tick_3_cp.messages and next(iter(tick_3_cp.messages.values()))[0].data == 2

    # Restored run: saves after each superstep it runs, chained to the restored checkpoint, no entry save.
    restore_from = _checkpoint_after_tick(storage, 2)
    timeline.clear()
    restored = make_restorable(countdown_agent())
    async for update in restored.run(
        stream=True, checkpoint_id=restore_from.checkpoint_id, checkpoint_storage=storage
    ):
        timeline.append(("update", update.text))
    assert timeline[0] == ("update", "tick 1")
    assert [k for k, _ in timeline] == ["update", "save", "update", "save"]
    first_saved = next(cp for cp in storage.saved if cp.checkpoint_id == timeline[1][1])
    assert first_saved.previous_checkpoint_id == restore_from.checkpoint_id


async def test_save_waits_for_the_consumer_within_a_superstep() -> None:
    """With two outputs in one superstep, save(C_k) still follows the host taking the second one."""
    from tests.apps.workflows import two_outputs

    timeline: list[tuple[str, Any]] = []
    storage = RecordingStorage(timeline)
    agent = two_outputs().as_agent()
    async for update in agent.run("2 delay=0.01", stream=True, checkpoint_storage=storage):
        timeline.append(("update", update.text))
    kinds = [k if k == "save" else v for k, v in timeline]
    assert kinds == ["save", "save", "a2", "b2", "save", "a1", "b1", "save"]


# endregion

# region (3) subclass run() is the entry point


class RecordingAgent(WorkflowAgent):
    calls: list[dict[str, Any]] = []

    def run(self, messages: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        type(self).calls.append(
            {"checkpoint_id": kwargs.get("checkpoint_id"), "has_messages": bool(messages)}
        )
        return super().run(messages, **kwargs)


async def test_subclass_run_is_called_on_recovery() -> None:
    storage, _ = await _run_countdown_with_checkpoints(2)
    middle = _checkpoint_after_tick(storage, 2)
    RecordingAgent.calls = []
    agent = make_restorable(RecordingAgent(countdown(), name="recorder"))
    assert isinstance(agent, RecordingAgent)
    assert make_restorable(agent) is agent and type(make_restorable(agent)) is type(agent)  # idempotent
    other = make_restorable(RecordingAgent(countdown(), name="other"))
    assert type(other) is type(agent)  # the dynamic class is cached per application class
    texts = [
        u.text
        async for u in agent.run(stream=True, checkpoint_id=middle.checkpoint_id, checkpoint_storage=storage)
    ]
    assert texts == ["tick 1", "tick 0"]
    assert RecordingAgent.calls == [{"checkpoint_id": middle.checkpoint_id, "has_messages": False}]


# endregion

# region (4) approval: pause on one instance, answer on another


async def _pause_approval(storage: RecordingStorage) -> tuple[str, WorkflowCheckpoint]:
    agent = approval_agent()
    calls = [
        c
        async for u in agent.run("ship it", stream=True, checkpoint_storage=storage)
        for c in u.contents
        if c.type == "function_call"
    ]
    assert len(calls) == 1 and calls[0].name == "request_info"
    pause = storage.saved[-1]
    assert pending_request_ids(pause) == [calls[0].call_id]
    return str(calls[0].call_id), pause


async def test_approval_answer_on_fresh_instance() -> None:
    storage = RecordingStorage()
    call_id, pause = await _pause_approval(storage)
    assert pending_request_payloads(pause) == {call_id: "Approve: ship it"}

    storage.timeline.clear()
    agent = make_restorable(approval_agent())
    answer = Message(role="tool", contents=[Content.from_function_result(call_id=call_id, result="approve")])
    updates = [
        u
        async for u in agent.run(
            answer, checkpoint_id=pause.checkpoint_id, checkpoint_storage=storage, stream=True
        )
    ]
    assert [u.text for u in updates] == ["Completed with decision: approve"]
    assert not any(c.type == "function_call" for u in updates for c in u.contents)
    # One run restores and delivers: the responses entry checkpoint (the answer queued, chained to
    # the pause, same iteration), then the answering superstep's. No empty restore superstep.
    saves = [
        cp for cp in storage.saved if cp.checkpoint_id in {v for k, v in storage.timeline if k == "save"}
    ]
    assert len(saves) == 2
    assert not saves[0].pending_request_info_events and saves[0].messages
    assert saves[0].previous_checkpoint_id == pause.checkpoint_id
    assert saves[0].iteration_count == pause.iteration_count
    assert not saves[1].pending_request_info_events and not saves[1].messages
    assert saves[1].iteration_count == pause.iteration_count + 1


async def test_approval_answer_non_streaming() -> None:
    storage = RecordingStorage()
    call_id, pause = await _pause_approval(storage)
    agent = make_restorable(approval_agent())
    answer = Message(role="tool", contents=[Content.from_function_result(call_id=call_id, result="deny")])
    response = await agent.run(answer, checkpoint_id=pause.checkpoint_id, checkpoint_storage=storage)
    assert [m.text for m in response.messages] == ["Completed with decision: deny"]


async def test_restore_without_answer_re_emits_the_pending_request() -> None:
    storage = RecordingStorage()
    call_id, pause = await _pause_approval(storage)
    agent = make_restorable(approval_agent())
    calls = [
        c
        async for u in agent.run(stream=True, checkpoint_id=pause.checkpoint_id, checkpoint_storage=storage)
        for c in u.contents
        if c.type == "function_call"
    ]
    assert [c.call_id for c in calls] == [call_id]


class _TwoAsks(Executor):
    """Asks two questions in one superstep; yields each answer as it comes."""

    def __init__(self) -> None:
        super().__init__(id="two_asks")

    @handler
    async def ask(self, messages: list[Message], ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(request_data="first?", response_type=str)
        await ctx.request_info(request_data="second?", response_type=str)

    @response_handler
    async def answered(self, original: str, answer: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{original} {answer}")


def _two_asks() -> WorkflowAgent:
    asks = _TwoAsks()
    return make_restorable(WorkflowBuilder(start_executor=asks, output_from=[asks]).build().as_agent())


async def test_answering_one_of_two_requests_shows_the_other_still_pending() -> None:
    """A partial answer goes in the run that restores (non-streaming here); the request it does
    not answer is shown again, and answered from the next pause."""
    storage = RecordingStorage()
    asked = await _two_asks().run("go", checkpoint_storage=storage)
    first, second = [str(c.call_id) for m in asked.messages for c in m.contents if c.type == "function_call"]

    def answer(call_id: str, text: str) -> Message:
        return Message(role="tool", contents=[Content.from_function_result(call_id=call_id, result=text)])

    pause = storage.saved[-1]
    partial = await _two_asks().run(
        answer(first, "yes"), checkpoint_id=pause.checkpoint_id, checkpoint_storage=storage
    )
    contents = [c for m in partial.messages for c in m.contents]
    assert [c.call_id for c in contents if c.type == "function_call"] == [second]
    assert [c.text for c in contents if c.type == "text"] == ["first? yes"]
    assert pending_request_ids(storage.saved[-1]) == [second]

    rest = _two_asks().run(
        answer(second, "no"),
        stream=True,
        checkpoint_id=storage.saved[-1].checkpoint_id,
        checkpoint_storage=storage,
    )
    updates = [u async for u in rest]
    assert [u.text for u in updates] == ["second? no"]
    assert not any(c.type == "function_call" for u in updates for c in u.contents)


# endregion

# region (5) restore finishes the workflow


async def test_restore_whose_queued_work_finishes_the_workflow() -> None:
    storage, _ = await _run_countdown_with_checkpoints(2)
    last = _checkpoint_after_tick(storage, 1)  # queued: the final "tick 0"
    agent = make_restorable(countdown_agent())
    texts = [
        u.text
        async for u in agent.run(stream=True, checkpoint_id=last.checkpoint_id, checkpoint_storage=storage)
    ]
    assert texts == ["tick 0"]
    # The same instance then takes a new turn normally.
    assert [u.text async for u in agent.run("1 delay=0", stream=True)] == ["tick 1", "tick 0"]


async def test_restore_then_new_input_keeps_both_outputs() -> None:
    storage, _ = await _run_countdown_with_checkpoints(2)
    last = _checkpoint_after_tick(storage, 1)
    agent = make_restorable(countdown_agent())
    texts = [
        u.text
        async for u in agent.run(
            "1 delay=0", stream=True, checkpoint_id=last.checkpoint_id, checkpoint_storage=storage
        )
    ]
    assert texts == ["tick 0", "tick 1", "tick 0"]


async def test_restore_requires_storage() -> None:
    agent = make_restorable(countdown_agent())
    with pytest.raises(Exception, match="checkpoint_storage"):
        async for _ in agent.run(stream=True, checkpoint_id="nope"):
            pass


# endregion

# region (6) encoding


@dataclasses.dataclass
class CustomState:
    label: str
    count: int


CUSTOM_KEY = f"{CustomState.__module__}:{CustomState.__qualname__}"


async def test_encode_decode_round_trip() -> None:
    storage, _ = await _run_countdown_with_checkpoints(2)
    for checkpoint in storage.saved:
        text = encode_checkpoint(checkpoint)
        json.loads(text)
        again = decode_checkpoint(text)
        assert again.checkpoint_id == checkpoint.checkpoint_id
        assert again.previous_checkpoint_id == checkpoint.previous_checkpoint_id
        assert again.iteration_count == checkpoint.iteration_count
        assert again.messages.keys() == checkpoint.messages.keys()
        assert again.state.keys() == checkpoint.state.keys()
        # Pickle bytes need not be identical on re-encoding, but the JSON structure is.
        assert json.loads(encode_checkpoint(again)).keys() == json.loads(text).keys()
    # A decoded checkpoint restores like the original.
    middle = _checkpoint_after_tick(storage, 2)
    fresh_storage = InMemoryCheckpointStorage()
    await fresh_storage.save(decode_checkpoint(encode_checkpoint(middle)))
    agent = make_restorable(countdown_agent())
    texts = [
        u.text
        async for u in agent.run(
            stream=True, checkpoint_id=middle.checkpoint_id, checkpoint_storage=fresh_storage
        )
    ]
    assert texts == ["tick 1", "tick 0"]


def test_checkpoint_values_encode_as_the_framework_encodes_them() -> None:
    """The host walks a checkpoint's JSON part itself (`encode_value`) and hands every other value
    to the framework: the result is the framework's own, on each supported release."""
    from collections import OrderedDict, defaultdict

    from agent_framework._workflows._checkpoint_encoding import encode_checkpoint_value

    from durable_responses.runtime._af_private.checkpoints import encode_value

    values: list[object] = [
        None, True, 3, 2**70, 1.5, "é\u2028", [], {},
        {"a": [1, {"b": None, "c": [CustomState("x", 1)]}], "d": {"e": "f"}},
        {"__pickled__": "x", "y": 1}, {"__type__": "t"}, {1: "a", "b": 2}, {1: "a", "1": "b"},
        (1, 2), {3, 4}, OrderedDict(a=1), defaultdict(list, a=[1]), [CustomState("y", 2), (5,)],
        {"nested": [[{"k": [None, 1.0, {"z": (1,)}]}]]},
    ]  # fmt: skip
    for value in values:
        assert encode_value(value) == encode_checkpoint_value(value), value


def test_checkpoint_text_keeps_values_orjson_would_change() -> None:
    states = (
        {"x": float("nan"), "y": float("inf")},
        {"none": None, "deep": [{"n": -float("inf")}]},  # a `null` of its own beside the float
        {"none": None, "f": 1.5},
        {"big": 2**70},
        {"t": "a\u00e9\x01"},
    )
    for state in states:
        checkpoint = WorkflowCheckpoint(workflow_name="w", graph_signature_hash="h", state=state)
        again = decode_checkpoint(encode_checkpoint(checkpoint)).state
        assert repr(again) == repr(state)


async def test_pause_checkpoint_round_trip_keeps_pending_requests() -> None:
    storage = RecordingStorage()
    call_id, pause = await _pause_approval(storage)
    again = decode_checkpoint(encode_checkpoint(pause))
    assert pending_request_ids(again) == [call_id]
    assert pending_request_payloads(again) == {call_id: "Approve: ship it"}


async def test_example_checkpoints_decode_under_the_default_allow_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STEP_DELAY_SECONDS", "0")
    from durable_responses.examples.echo import echo
    from tests.apps.workflows import silent_prefix, two_outputs

    for workflow, text in [(countdown(), "2 delay=0"), (echo(), "hi"), (two_outputs(), "2 delay=0")]:
        storage = RecordingStorage()
        async for _ in workflow.as_agent().run(text, stream=True, checkpoint_storage=storage):
            pass
        assert storage.saved
        for checkpoint in storage.saved:
            decode_checkpoint(encode_checkpoint(checkpoint))
    storage = RecordingStorage()
    async for _ in silent_prefix().as_agent().run("x", stream=True, checkpoint_storage=storage):
        pass
    for checkpoint in storage.saved:
        decode_checkpoint(encode_checkpoint(checkpoint))


def test_disallowed_type_is_refused_then_accepted_once_allowed() -> None:
    checkpoint = WorkflowCheckpoint(
        workflow_name="w", graph_signature_hash="h", state={"x": CustomState("a", 1)}
    )
    text = encode_checkpoint(checkpoint)
    with pytest.raises(CheckpointTypeRefused) as refused:
        decode_checkpoint(text)
    message = str(refused.value)
    assert CUSTOM_KEY in message
    assert "--allow-checkpoint-type" in message and "DURABLE_RESPONSES_CHECKPOINT_TYPES" in message
    assert refused.value.type_name == CUSTOM_KEY
    decoded = decode_checkpoint(text, allowed_types=[CUSTOM_KEY])
    assert decoded.state["x"] == CustomState("a", 1)


def test_corrupt_checkpoint_is_not_a_type_refusal() -> None:
    from agent_framework.exceptions import WorkflowCheckpointException

    with pytest.raises(WorkflowCheckpointException):
        decode_checkpoint("{not json")
    with pytest.raises(WorkflowCheckpointException):
        decode_checkpoint(json.dumps({"state": {"__pickled__": "!!!", "__type__": "builtins:int"}}))


# endregion

# region request payloads and arguments


@dataclasses.dataclass
class Ask:
    question: str
    options: list[str]


def _checkpoint_with_requests(**data: Any) -> WorkflowCheckpoint:
    events = {
        rid: WorkflowEvent.request_info(
            request_id=rid, source_executor_id="x", request_data=value, response_type=str
        )
        for rid, value in data.items()
    }
    return WorkflowCheckpoint(workflow_name="w", graph_signature_hash="h", pending_request_info_events=events)


def test_pending_request_payloads_are_json_friendly() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque!"

    checkpoint = _checkpoint_with_requests(
        r1="text", r2=7, r3={"a": [1, 2]}, r4=Ask("ok?", ["y", "n"]), r5=Opaque(), r6=None
    )
    assert pending_request_ids(checkpoint) == ["r1", "r2", "r3", "r4", "r5", "r6"]
    payloads = pending_request_payloads(checkpoint)
    assert payloads == {
        "r1": "text",
        "r2": 7,
        "r3": {"a": [1, 2]},
        "r4": {"question": "ok?", "options": ["y", "n"]},
        "r5": "opaque!",
        "r6": None,
    }
    json.dumps(payloads)


def test_pending_request_payloads_pydantic() -> None:
    from pydantic import BaseModel

    class Form(BaseModel):
        name: str

    assert pending_request_payloads(_checkpoint_with_requests(r=Form(name="n"))) == {"r": {"name": "n"}}


async def test_clean_request_info_arguments_from_a_live_update() -> None:
    agent = approval_agent()
    calls = [
        c async for u in agent.run("deploy", stream=True) for c in u.contents if c.type == "function_call"
    ]
    call_id, name, arguments = clean_request_info_arguments(calls[0])
    assert call_id == calls[0].call_id and name == "request_info"
    assert json.loads(arguments) == {"request_id": call_id, "data": "Approve: deploy"}
    assert "request_event" not in arguments


def test_clean_request_info_arguments_dataclass_and_string_forms() -> None:
    event = WorkflowEvent.request_info(
        request_id="r9", source_executor_id="x", request_data=Ask("q", ["a"]), response_type=str
    )
    content = Content.from_function_call(
        call_id="r9",
        name="request_info",
        arguments=WorkflowAgent.RequestInfoFunctionArgs(request_id="r9", request_event=event).to_dict(),
    )
    assert json.loads(clean_request_info_arguments(content)[2]) == {
        "request_id": "r9",
        "data": {"question": "q", "options": ["a"]},
    }
    as_text = Content.from_function_call(
        call_id="r8",
        name="request_info",
        arguments=json.dumps({"request_id": "r8", "request_event": {"data": 1}}),
    )
    assert json.loads(clean_request_info_arguments(as_text)[2]) == {"request_id": "r8", "data": 1}


def test_clean_arguments_of_plain_function_calls() -> None:
    as_dict = Content.from_function_call(call_id="c1", name="get_weather", arguments={"city": "Oslo"})
    assert clean_request_info_arguments(as_dict) == ("c1", "get_weather", '{"city": "Oslo"}')
    as_text = Content.from_function_call(call_id="c2", name="f", arguments='{"a":1}')
    assert clean_request_info_arguments(as_text) == ("c2", "f", '{"a":1}')
    no_args = Content.from_function_call(call_id="c3", name="g")
    assert clean_request_info_arguments(no_args) == ("c3", "g", "{}")
    with pytest.raises(ValueError):
        clean_request_info_arguments(Content.from_text("hi"))


# endregion


# region typed replies


def test_pending_response_types_read_the_declared_types() -> None:
    events = {
        "r1": WorkflowEvent.request_info(
            request_id="r1", source_executor_id="x", request_data="how many?", response_type=int
        ),
        "r2": WorkflowEvent.request_info(
            request_id="r2", source_executor_id="x", request_data=Ask("ok?", []), response_type=Ask
        ),
    }
    checkpoint = WorkflowCheckpoint(
        workflow_name="w", graph_signature_hash="h", pending_request_info_events=events
    )
    assert pending_response_types(checkpoint) == {"r1": int, "r2": Ask}
    # The types survive the checkpoint encoding (Ask allowed, as an application would).
    decoded = decode_checkpoint(encode_checkpoint(checkpoint), allowed_types=[f"{__name__}:Ask"])
    assert pending_response_types(decoded) == {"r1": int, "r2": Ask}


def test_coerce_request_response_matches_the_framework() -> None:
    from pydantic import BaseModel

    class Form(BaseModel):
        name: str

    assert coerce_request_response(3, int) == 3
    assert coerce_request_response(3, float) == 3.0 and isinstance(coerce_request_response(3, float), float)
    assert coerce_request_response({"question": "q", "options": ["a"]}, Ask) == Ask("q", ["a"])
    assert coerce_request_response({"name": "n"}, Form) == Form(name="n")
    assert coerce_request_response([1, 2], list[int]) == [1, 2]
    assert coerce_request_response(None, int | None) is None
    for value, target in ((True, int), (1.5, int), ("3", int), ({"question": 1}, Ask), ([1, "x"], list[int])):
        with pytest.raises(TypeError):
            coerce_request_response(value, target)
    with pytest.raises(TypeError, match="name"):  # pydantic says which field failed
        coerce_request_response({}, Form)


# endregion


_MADE: list[int] = []


class _Burst50(Executor):
    """50 outputs in one handler that awaits nothing but `yield_output`."""

    def __init__(self) -> None:
        super().__init__(id="burst50")

    @handler
    async def run(self, _messages: list[Message], ctx: WorkflowContext[Never, str]) -> None:
        for i in range(50):
            _MADE.append(i)
            await ctx.yield_output(f"out {i}")


async def test_pace_events_hands_over_each_event_as_it_is_made() -> None:
    """Pinned on 1.23.0: without pacing a handler's outputs reach the stream only after it returns;
    with it, the stream has the first output while the handler is still yielding."""

    async def made_when_first_seen(paced: bool) -> int:
        _MADE.clear()
        b = _Burst50()
        agent = WorkflowBuilder(name="burst50", start_executor=b, output_from=[b]).build().as_agent()
        turns: list[int] = []

        async def pace() -> None:
            turns.append(1)
            await asyncio.sleep(0)

        if paced:
            assert pace_events(agent, pace)
            assert pace_events(agent, pace)  # the same workflow again: swapped, not wrapped twice
        seen: int | None = None
        async for update in agent.run("go", stream=True):
            if seen is None and any(c.type == "text" for c in update.contents or ()):
                seen = len(_MADE)
        assert seen is not None
        if paced:
            assert 50 <= len(turns) < 100  # one pace per event (outputs plus a few lifecycle events)
        return seen

    assert await made_when_first_seen(paced=False) == 50
    assert await made_when_first_seen(paced=True) < 10


def test_pace_events_leaves_other_agents_alone() -> None:
    class NotAWorkflow:
        pass

    async def pace() -> None:
        return None

    assert pace_events(NotAWorkflow(), pace) is False


async def test_on_events_end_runs_after_the_last_event_before_the_final_response() -> None:
    """Pinned on 1.23.0: the hook runs once the workflow's last update is taken, before the stream
    builds its final response (the after-run providers run after that), on a first run and on a
    restore with no new input alike."""
    timeline: list[str] = []

    async def hook() -> None:
        timeline.append("events ended")

    storage = RecordingStorage()
    agent = make_restorable(
        countdown().as_agent(
            context_providers=[FinalResponseProbe(lambda: timeline.append("final response built"))]
        )
    )
    assert on_events_end(agent, hook)
    async for update in agent.run("2 delay=0", stream=True, checkpoint_storage=storage):
        storage.timeline.append(("update", update.text))
        timeline.append(update.text)
    assert timeline == ["tick 2", "tick 1", "tick 0", "events ended", "final response built"]

    timeline.clear()
    restored = make_restorable(
        countdown().as_agent(
            context_providers=[FinalResponseProbe(lambda: timeline.append("final response built"))]
        )
    )
    assert on_events_end(restored, hook)
    middle = _checkpoint_after_tick(storage, 2)
    async for update in restored.run(
        stream=True, checkpoint_id=middle.checkpoint_id, checkpoint_storage=storage
    ):
        timeline.append(update.text)
    assert timeline == ["tick 1", "tick 0", "events ended", "final response built"]


def test_on_events_end_needs_a_restorable_agent() -> None:
    async def hook() -> None:
        return None

    assert on_events_end(countdown_agent(), hook) is False


# region typed inputs and declared types (issue 36)


def test_as_agent_still_refuses_a_start_executor_that_takes_no_messages() -> None:
    """Why the host has `_TypedInputWorkflowAgent`: `Workflow.as_agent()` refuses a typed start."""
    from durable_responses.examples.typed_fanout import typed_fanout

    with pytest.raises(ValueError, match=r"cannot handle list\[Message\]"):
        typed_fanout().as_agent()


async def test_a_typed_workflow_agent_runs_its_workflow_on_the_converted_input() -> None:
    """`WorkflowAgent.workflow` returns the `_workflow` the typed agent sets, and the restorable
    input phase sends `convert(messages)` as the workflow's message."""
    from durable_responses.examples.typed_fanout import Batch, typed_fanout
    from durable_responses.runtime._af_private import typed_workflow_agent

    workflow = typed_fanout()
    seen: list[Any] = []

    def convert(messages: Any) -> Batch:
        seen.append([m.text for m in messages])
        return Batch(numbers=[1, 2, 3], label="pinned")

    agent = typed_workflow_agent(workflow, convert, name="typed")
    assert agent.workflow is workflow and agent.name == "typed"
    texts = [u.text async for u in agent.run([Message("user", ["go"])], stream=True)]
    assert seen == [["go"]]
    assert json.loads("".join(texts)) == {
        "label": "pinned",
        "count": 3,
        "stats": {"max": 3.0, "mean": 2.0, "sum": 6.0},
    }


def test_declared_request_types_reads_the_response_handlers() -> None:
    from durable_responses.examples.review import Reviewer, ReviewRequest, Verdict
    from durable_responses.runtime._af_private import declared_request_types, dispatchable

    assert declared_request_types(Reviewer()) == [ReviewRequest, Verdict]
    from typing import TypedDict

    class P(TypedDict):
        x: int

    assert dispatchable(1, int) and not dispatchable("1", int)
    assert not dispatchable({"x": 1}, P)  # 1.23.0: isinstance refuses a TypedDict


# endregion


def test_functional_workflow_of_unwraps_as_agent() -> None:
    from durable_responses.examples.functional import order_pipeline
    from durable_responses.runtime._af_private import functional_workflow_of

    built = order_pipeline.build()
    assert functional_workflow_of(built.as_agent()) is built
    # The host rebuilds it from the function both expose (functools.update_wrapper).
    assert built.__wrapped__ is order_pipeline.__wrapped__


def test_a_graph_warning_shows_once_per_process_not_once_per_build(caplog: pytest.LogCaptureFixture) -> None:
    """Pins the framework's validation logger by behaviour: building the countdown (an
    intentional self-loop) warns on `VALIDATION_LOGGER`; with the host's filter installed, a
    second, third build (the host builds one per run) adds no copy of that warning."""
    from durable_responses.examples.countdown import countdown
    from durable_responses.runtime._af_private import build_warnings

    logger = logging.getLogger(build_warnings.VALIDATION_LOGGER)
    installed = build_warnings._ONCE in logger.filters
    seen = set(build_warnings._ONCE.seen)
    logger.removeFilter(build_warnings._ONCE)
    try:

        def self_loop_warnings() -> list[logging.LogRecord]:
            return [
                r
                for r in caplog.records
                if r.name == build_warnings.VALIDATION_LOGGER and "Self-loop detected" in r.getMessage()
            ]

        # (This module's autouse fixture raised the framework's level: set the logger's own.)
        with caplog.at_level(logging.WARNING, logger=build_warnings.VALIDATION_LOGGER):
            countdown()
            countdown()
            assert len(self_loop_warnings()) == 2  # the framework warns at every build
            caplog.clear()
            build_warnings._ONCE.seen.clear()
            build_warnings.quiet_repeated_build_warnings()
            build_warnings.quiet_repeated_build_warnings()  # idempotent
            assert logger.filters.count(build_warnings._ONCE) == 1
            for _ in range(3):
                countdown()
            assert len(self_loop_warnings()) == 1
    finally:
        logger.removeFilter(build_warnings._ONCE)
        build_warnings._ONCE.seen.clear()
        build_warnings._ONCE.seen.update(seen)
        if installed:
            logger.addFilter(build_warnings._ONCE)


def test_an_unnamed_workflows_made_up_name_is_not_the_apps_name() -> None:
    """`WorkflowBuilder` names an unnamed workflow `WorkflowBuilder-<uuid4>`, another per build
    (and per process): the app is called by its `--app` target instead, in every process."""
    from agent_framework import Executor, Workflow, WorkflowBuilder, handler

    from durable_responses.runtime._af_private import generated_name
    from durable_responses.runtime.apps.apps import HostedApp

    class Echo(Executor):
        @handler
        async def run(self, messages: list[Message], ctx: WorkflowContext[None, str]) -> None:
            await ctx.yield_output("ok")

    def unnamed() -> Workflow:
        return WorkflowBuilder(start_executor=Echo(id="echo")).build()

    made_up = unnamed().name
    assert generated_name(made_up) and generated_name(unnamed().as_agent().name), made_up
    assert not generated_name("WorkflowBuilder") and not generated_name(None)
    named = WorkflowBuilder(name="mine", start_executor=Echo(id="echo")).build()
    assert not generated_name(named.name)
    assert HostedApp("pkg.mod:unnamed", unnamed).name == "pkg.mod:unnamed"
    assert HostedApp("pkg.mod:named", lambda: named).name == "mine"
