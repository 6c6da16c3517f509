"""Typed fan-out / fan-in: a workflow whose start executor takes a dataclass, not messages.

The request's text is a JSON object, `{"numbers": [3, 1, 2], "label": "sample"}`, which the
host builds into a `Batch` (a text that is not one is a 400 naming the expected JSON schema,
which `GET /v1/models/{id}` also shows). The batch fans out to three statistics executors that
run in the same superstep; the fan-in edge hands their three results to the report, which
yields a `Report` dataclass: the host shows it as JSON text.

Deterministic and model-free: the same batch always gives the same report. Its checkpoints hold
`Batch`, `Stat` and `Report`, which the host admits to the checkpoint allow-list because the
workflow declares them (no `--allow-checkpoint-type` needed).

    durable-responses serve --app durable_responses.examples.typed_fanout:typed_fanout
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_framework import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler


@dataclass
class Batch:
    """The workflow's input: the numbers to summarize and a label for the report."""

    numbers: list[int]
    label: str = "batch"


@dataclass
class Stat:
    """One statistic of a batch, computed by one fanned-out executor."""

    name: str
    value: float


@dataclass
class Report:
    """The workflow's output: every statistic of the batch, by name."""

    label: str
    count: int
    stats: dict[str, float] = field(default_factory=dict)


class Split(Executor):
    """Start executor: takes the typed `Batch` and hands it to every statistic."""

    def __init__(self) -> None:
        super().__init__(id="split")

    @handler
    async def split(self, batch: Batch, ctx: WorkflowContext[Batch]) -> None:
        ctx.set_state("label", batch.label)
        ctx.set_state("count", len(batch.numbers))
        await ctx.send_message(batch)


class Statistic(Executor):
    """Computes one statistic of the batch (runs beside the others, in the same superstep)."""

    def __init__(self, name: str) -> None:
        super().__init__(id=f"stat_{name}")
        self.name = name

    @handler
    async def compute(self, batch: Batch, ctx: WorkflowContext[Stat]) -> None:
        numbers = batch.numbers
        if self.name == "sum":
            value = float(sum(numbers))
        elif self.name == "max":
            value = float(max(numbers)) if numbers else 0.0
        else:
            value = sum(numbers) / len(numbers) if numbers else 0.0
        await ctx.send_message(Stat(self.name, value))


class Collect(Executor):
    """Fan-in: receives the three statistics at once and yields the report."""

    def __init__(self) -> None:
        super().__init__(id="collect")

    @handler
    async def collect(self, stats: list[Stat], ctx: WorkflowContext[None, Report]) -> None:
        report = Report(
            label=str(ctx.get_state("label", "batch")),
            count=int(ctx.get_state("count", 0)),
            stats={s.name: s.value for s in sorted(stats, key=lambda s: s.name)},
        )
        await ctx.yield_output(report)


def typed_fanout() -> Workflow:
    """A fresh typed fan-out / fan-in workflow (the host builds one per run)."""
    split = Split()
    stats = [Statistic("sum"), Statistic("max"), Statistic("mean")]
    collect = Collect()
    builder = WorkflowBuilder(name="typed_fanout", start_executor=split, output_from=[collect])
    builder.add_fan_out_edges(split, stats)
    builder.add_fan_in_edges(stats, collect)
    return builder.build()
