"""The launcher: builds a run from its spec and plan, registers it, starts it. Creation and
recovery both launch through here, so a run is built one way.

Invariants:
- Every run gets a freshly built agent (`HostedApp.build`, called when the run starts).
- A stored run's sink is fenced by this process's lease (`owner`); a `store=false` run gets
  the memory sink and storage pair and writes nothing.
- A run is registered before it starts and leaves the registry when it ends; relays waiting on
  it re-check then (it may have ended without a commit).
- A stored response that ends `failed` or `cancelled` re-opens the pending requests it had
  answered, so the client can send the same reply again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from ...observability import metrics
from ...store import JournalRow, Store
from ..apps.apps import HostedApp
from ..delivery.webhooks import Webhooks
from ..journal import JournalStats, RunJournal, unreachable
from ..pauses.approval_calls import AnsweredCall, approval_calls
from ..settings import Delivery, RuntimeSettings
from .checkpoint_storage import SqlCheckpointStorage
from .drive import AppEntry, Driver, JournalUse, Pacing
from .ending import Ending
from .mapping import MapperSetup
from .memory import MemoryPairing, MemorySink
from .open_items import OpenItem
from .pairing import SqlPairing
from .plan import RunPlan, RunSpec
from .registry import RunRegistry
from .run import OnFinished, ResponseRun
from .sinks import SqlSink
from .telemetry import NO_TRACE, RunTrace, Telemetry
from .usage import RunUsage, StreamUsage, Usage, UsageMeter, ensure_usage_spans

log = logging.getLogger("durable_responses.launcher")

# How long a streaming creator's run waits for its relay to send `response.created` before it
# starts anyway (an agent that hogs the loop must not hold back the first bytes).
START_AT_MOST = 0.05


class Launcher:
    def __init__(
        self,
        store: Store,
        app: HostedApp,
        settings: RuntimeSettings,
        registry: RunRegistry,
        owner: str,
        webhooks: Webhooks | None = None,
        *,
        name: str | None = None,
    ) -> None:
        self._store = store
        self._webhooks = webhooks
        self._app = app
        self._settings = settings
        self._registry = registry
        self.owner = owner
        self._background: set[asyncio.Task[None]] = set()
        # The name its responses record (`responses.app`): the app's, or the one it is hosted by.
        self.app_name = name or app.name
        self.telemetry = Telemetry(self.app_name, owner)
        self._entry = AppEntry(app.build, app.is_workflow, app.reach)
        # Usage is counted from the framework's model-call spans (see `usage`).
        ensure_usage_spans()
        if settings.journal:
            _log_unreachable(app, self.app_name)

    def sink(
        self,
        response_id: str,
        start_seq: int,
        delivery: Delivery | str | None = None,
        *,
        background: bool = False,
        prior_usage: str | None = None,
        prior_journal: str | None = None,
    ) -> SqlSink:
        """The sink a stored run of `response_id` writes through, from `start_seq` on, built
        complete: the run's usage (from `prior_usage`, what earlier lives left on the response
        row), its journal (counts from `prior_journal`), and for a background response, when
        webhooks are on, the webhook event its end commits."""
        live = (delivery or self._settings.delivery) == Delivery.LIVE
        hooks = (
            self._webhooks if background and self._webhooks is not None and self._webhooks.enabled else None
        )
        return SqlSink(
            self._store,
            response_id,
            self.owner,
            live=live,
            start_seq=start_seq,
            usage=RunUsage(UsageMeter(), StreamUsage(), Usage.from_body(prior_usage)),
            webhook_for=hooks.event_for if hooks is not None else None,
            on_webhook=hooks.wake if hooks is not None else None,
            journaling=self._settings.journal,
            journal_stats=JournalStats.from_json(prior_journal),
        )

    def launch(
        self,
        spec: RunSpec,
        plan: RunPlan,
        *,
        sink: SqlSink,
        next_index: int = 0,
        defer: bool = False,
        trace: RunTrace = NO_TRACE,
        resumed: bool = False,
        journal_rows: list[JournalRow] | None = None,
        resumed_items: Sequence[OpenItem] = (),
        on_finished: Sequence[OnFinished] = (),
    ) -> ResponseRun:
        """Start the run of a stored response (defer: let its relay start it, see `START_AT_MOST`;
        resumed: an earlier life of the response ran, its journal records are read, or given as
        `journal_rows`; `resumed_items`: message items a crash left open that the re-run's replay
        of their recorded model call continues; `on_finished`: told after the launcher's own)."""
        usage = sink.usage
        mapping = MapperSetup(
            spec.response_id,
            sink.emit,
            next_output_index=next_index,
            announced=plan.announced,
            server_label=self._app.name,
            answered_calls=_answered_calls(plan),
            server_tools=self._settings.server_tools,
            resumed=resumed_items,
            usage=usage.stream,
        )
        types = self._settings.checkpoint_types
        pairing = SqlPairing(self._store, spec, plan, sink, mapping, types, trace=trace)
        journal = JournalUse(sink.journal, self._records(spec.response_id, resumed, journal_rows))
        return self._start(
            ResponseRun(
                spec,
                sink=sink,
                driver=self._driver(spec, plan, sink, pairing, usage.meter, journal),
                ending=Ending(spec, sink, pairing, self._store.output_items, usage, trace=trace),
                hand_over=lambda outage: self._hand_over(spec.response_id, outage=outage),
                trace=trace,
                on_finished=(self._after_stored_run, *self._finished_hooks(), *on_finished),
            ),
            defer,
        )

    def _records(
        self, response_id: str, resumed: bool, given: list[JournalRow] | None
    ) -> Callable[[], Awaitable[list[JournalRow]]] | None:
        """Where a run finds its journal's records: only one that resumes an earlier life of the
        response can find any (read now, or `given` by recovery, which read them already)."""
        if given is not None:
            rows = given

            async def found() -> list[JournalRow]:
                return rows

            return found
        if not resumed:
            return None

        async def read() -> list[JournalRow]:
            return await self._store.journal(response_id)

        return read

    def launch_in_memory(
        self,
        spec: RunSpec,
        plan: RunPlan,
        sink: MemorySink,
        *,
        defer: bool,
        trace: RunTrace = NO_TRACE,
        on_finished: Sequence[OnFinished] = (),
    ) -> ResponseRun:
        """Start the run of a `store=false` response (nothing is written)."""
        usage = RunUsage(UsageMeter(), StreamUsage())
        mapping = MapperSetup(
            spec.response_id,
            sink.emit,
            server_label=self._app.name,
            answered_calls=_answered_calls(plan),
            server_tools=self._settings.server_tools,
            usage=usage.stream,
        )

        async def stored_checkpoint(checkpoint_id: str):  # type: ignore[no-untyped-def]
            # A store=false turn may continue a stored workflow: read only.
            reader = SqlCheckpointStorage(
                self._store,
                user_id=spec.user_id,
                lineage=spec.lineage,
                response_id=spec.response_id,
                allowed_types=self._settings.checkpoint_types,
            )
            return await reader.load(checkpoint_id)

        pairing = MemoryPairing(mapping, sink, stored_checkpoint)

        async def nothing_to_release(_outage: bool) -> None:
            return None

        journal = JournalUse(RunJournal(spec.response_id, None))
        return self._start(
            ResponseRun(
                spec,
                sink=sink,
                driver=self._driver(spec, plan, sink, pairing, usage.meter, journal),
                ending=Ending(spec, sink, pairing, None, usage),
                hand_over=nothing_to_release,
                trace=trace,
                on_finished=(*self._finished_hooks(), *on_finished),
            ),
            defer,
        )

    def _driver(
        self,
        spec: RunSpec,
        plan: RunPlan,
        sink: SqlSink | MemorySink,
        pairing: SqlPairing | MemoryPairing,
        meter: UsageMeter,
        journal: JournalUse,
    ) -> Driver:
        s = self._settings
        pacing = Pacing(s.yield_every, s.commit_lag, "live" if sink.live else "durable")
        return Driver(spec, plan, sink, pairing, self._entry, pacing, meter, journal)

    def _finished_hooks(self) -> tuple[OnFinished, ...]:
        """What every run tells once finished: it leaves the registry, relays waiting on it
        re-check (it may have ended without a commit), its end is counted."""
        return (self._registry.remove, self._publish_end, _count_end)

    def _publish_end(self, run: ResponseRun) -> None:
        self._store.notifier.publish(run.response_id)

    def _start(self, run: ResponseRun, defer: bool) -> ResponseRun:
        self._registry.add(run)
        if defer:
            run.start_soon(START_AT_MOST)
        else:
            run.start()
        return run

    async def _hand_over(self, response_id: str, *, outage: bool) -> None:
        """A run stopped on a refused write: release its lease (any replica may resume it at
        once). After a database outage, whether or not the release got through, tell our own
        recovery too, which takes it back as soon as writes work (the lease, still ours if
        the release failed, fences off everyone else meanwhile)."""
        try:
            await self._store.release_lease(response_id, self.owner)
        except Exception as exc:
            # (Not an outage of its own: a refusal that is not one must be counted when its
            # lease expires and it is taken over, so that it cannot loop forever.)
            log.info("response %s: could not release its lease: %s", response_id, exc)
        if outage:
            self._registry.strand(response_id)

    def _after_stored_run(self, run: ResponseRun) -> None:
        if run.final_status in ("failed", "cancelled"):
            task = asyncio.get_running_loop().create_task(self._release_answers(run.response_id))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _release_answers(self, response_id: str) -> None:
        # (Checkpoints were pruned in the run's final transaction.)
        try:
            await self._store.release_answers(response_id)
        except Exception:
            log.exception("response %s: clean-up after the run failed", response_id)


def _answered_calls(plan: RunPlan) -> dict[str, AnsweredCall]:
    """The calls this turn may run that the turn it answers never showed: those its stored state
    held back (`plan.held_calls`) and those its approval answers decide (these win)."""
    return {**plan.held_calls, **approval_calls(plan.messages)}


def _log_unreachable(app: HostedApp, name: str) -> None:
    """Once, at start-up: the executors whose agents the journal cannot reach by itself (read
    from the agent built at load, `HostedApp.probe`: no build of its own)."""
    try:
        hidden = unreachable(app.probe, is_workflow=app.is_workflow)
    except Exception as exc:  # an odd agent's attributes: the journal's runs report what matters
        log.debug("app %s: not inspected for the journal: %r", name, exc)
        return
    if hidden:
        log.info(
            "app %s: the journal records the model and tool calls of agent executors; an agent that "
            "executor(s) %s build themselves is recorded only if they pass it to "
            "durable_responses.journaled(agent)",
            name,
            ", ".join(hidden),
        )


def _count_end(run: ResponseRun) -> None:
    if run.final_status is not None:
        metrics.RESPONSES_ENDED.inc(status=run.final_status)
