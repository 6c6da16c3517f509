"""A run's parts, built through their constructors and tested alone: the launcher's sink
(usage, journal and webhooks given at construction), the pairing and the ending, against a
real store or a memory sink."""

from __future__ import annotations

import json

from agent_framework import Message

from durable_responses.examples.echo_agent import echo_agent
from durable_responses.protocol.request import parse_create_request
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.run import ending, launcher
from durable_responses.runtime.run.mapping import MapperSetup
from durable_responses.runtime.run.memory import MemoryPairing, MemorySink
from durable_responses.runtime.run.plan import RunPlan, RunSpec
from durable_responses.runtime.run.registry import RunRegistry
from durable_responses.runtime.run.usage import RunUsage, StreamUsage, Usage, UsageMeter
from durable_responses.runtime.settings import RuntimeSettings
from durable_responses.store import Store
from tests.store.helpers import event, owned


def _usage_json(input_tokens: int, output_tokens: int) -> str:
    usage = Usage()
    usage.input_tokens, usage.output_tokens = input_tokens, output_tokens
    return json.dumps(usage.body())


def _spec(rid: str) -> RunSpec:
    req = parse_create_request({"input": "hi"})
    return RunSpec(
        response_id=rid, user_id="alice", created_at=1.0, request=req, background=True, lineage=f"resp:{rid}"
    )


def _launcher(store: Store) -> launcher.Launcher:
    app = HostedApp("durable_responses.examples.echo_agent:echo_agent", echo_agent)
    return launcher.Launcher(store, app, RuntimeSettings(), RunRegistry(), "p1")


async def test_a_sink_carries_what_earlier_lives_left_from_its_construction(store: Store) -> None:
    """Recovery's sink is built with the usage and journal counts the response row kept: its
    first write keeps them on the row, with nothing set on the sink after it was built."""
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    prior = _usage_json(12, 5)
    sink = _launcher(store).sink(
        "resp_1",
        1,
        "durable",
        prior_usage=prior,
        prior_journal=json.dumps({"recorded": 2, "replayed": 1, "rerun": 0}),
    )
    assert sink.usage.total().input_tokens == 12
    assert sink.journal.record is not None  # the journal is on by default: records go through this sink
    assert sink.journal.stats.recorded == 2
    sink.emit({"type": "response.output_text.delta", "delta": "x"})
    await sink.commit()
    row = await store.get_response("resp_1", None)
    assert row is not None and row.usage is not None
    assert json.loads(row.usage)["input_tokens"] == 12 and json.loads(row.usage)["output_tokens"] == 5


async def test_a_launched_run_is_registered_and_leaves_the_registry_through_its_hooks(store: Store) -> None:
    """The launcher registers the run it built and gives it its finish hooks at construction:
    once the run ends it has left the registry, and the caller's own hook ran after the
    launcher's (the registry's removal among them)."""
    await store.insert_response(owned("resp_4", "p1"), [], [event(0, "response.created")])
    registry = RunRegistry()
    app = HostedApp("durable_responses.examples.echo_agent:echo_agent", echo_agent)
    launch = launcher.Launcher(store, app, RuntimeSettings(), registry, "p1")
    sink = launch.sink("resp_4", 1, "durable")
    seen: list[bool] = []
    plan = RunPlan(messages=[Message("user", ["hi"])])
    run = launch.launch(
        _spec("resp_4"),
        plan,
        sink=sink,
        on_finished=(lambda r: seen.append(registry.get(r.response_id) is None),),
    )
    assert registry.get("resp_4") is run
    await run.done.wait()
    assert seen == [True] and registry.get("resp_4") is None
    row = await store.get_response("resp_4", None)
    assert row is not None and row.status == "completed"


async def test_an_ending_alone_ends_with_the_usage_it_was_given() -> None:
    """`Ending` against a memory sink: the terminal event carries the run's usage (earlier
    lives' plus this run's stream), and the open items it closes."""
    sink = MemorySink()
    stream = StreamUsage()
    usage = RunUsage(UsageMeter(), stream, Usage.from_body(_usage_json(7, 3)))
    paired = MemoryPairing(MapperSetup("resp_3", sink.emit, usage=stream), sink)
    end = ending.Ending(_spec("resp_3"), sink, paired, None, usage)
    await end.finish("completed", close_status="completed")
    terminal = json.loads(sink.events[-1].data)
    assert terminal["type"] == "response.completed"
    assert terminal["response"]["usage"]["input_tokens"] == 7
    assert terminal["response"]["usage"]["output_tokens"] == 3
    assert end.status == "completed"


# That no part of a run (nor anything else in `server/`) is patched after its construction is
# checked for the whole of `server/` by tests/test_construction.py.
