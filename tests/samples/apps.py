"""`--app` factories for the vendored agent-framework samples (tests/samples/upstream, SOURCES.json).

Each sample builds its workflow inside `main()`; each factory here builds the same graph from the
sample's own classes and agents, line for line as `main()` does (only the runs `main()` then makes
are left out: the host makes those). The model client is the sample's, `OpenAIChatClient()`, which
reads `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_CHAT_MODEL` (the tests point them at the fake).
"""

from __future__ import annotations

from typing import Any

from agent_framework import Agent, AgentExecutor, Workflow, WorkflowBuilder
from agent_framework.openai import OpenAIChatClient, OpenAIChatOptions

from tests.samples.upstream import (
    agents_with_HITL,
    checkpoint_with_resume,
    fan_out_fan_in_edges,
    guessing_game_with_human_input,
)


def fan_out_fan_in() -> Workflow:
    """`fan_out_fan_in_edges.main()`, steps 1 and 2."""
    m = fan_out_fan_in_edges
    dispatcher = m.DispatchToExperts(id="dispatcher")
    aggregator = m.AggregateInsights(id="aggregator")

    researcher = AgentExecutor(
        Agent(
            client=OpenAIChatClient(),
            instructions=(
                "You're an expert market and product researcher. Given a prompt, provide concise, factual insights,"
                " opportunities, and risks."
            ),
            name="researcher",
        )
    )
    marketer = AgentExecutor(
        Agent(
            client=OpenAIChatClient(),
            instructions=(
                "You're a creative marketing strategist. Craft compelling value propositions and target messaging"
                " aligned to the prompt."
            ),
            name="marketer",
        )
    )
    legal = AgentExecutor(
        Agent(
            client=OpenAIChatClient(),
            instructions=(
                "You're a cautious legal/compliance reviewer. Highlight constraints, disclaimers, and policy concerns"
                " based on the prompt."
            ),
            name="legal",
        )
    )
    return (
        WorkflowBuilder(start_executor=dispatcher)
        .add_fan_out_edges(dispatcher, [researcher, marketer, legal])
        .add_fan_in_edges([researcher, marketer, legal], aggregator)
        .build()
    )


def guessing_game() -> Workflow:
    """`guessing_game_with_human_input.main()`: the agent, the turn manager and their loop."""
    m = guessing_game_with_human_input
    guessing_agent = Agent(
        client=OpenAIChatClient(),
        name="GuessingAgent",
        instructions=(
            "You guess a number between 1 and 10. "
            "If the user says 'higher' or 'lower', adjust your next guess. "
            'You MUST return ONLY a JSON object exactly matching this schema: {"guess": <integer 1..10>}. '
            "No explanations or additional text."
        ),
        default_options=OpenAIChatOptions[Any](response_format=m.GuessOutput),
    )
    turn_manager = m.TurnManager(id="turn_manager")
    return (
        WorkflowBuilder(start_executor=turn_manager)
        .add_edge(turn_manager, guessing_agent)
        .add_edge(guessing_agent, turn_manager)
    ).build()


def factor_pairs() -> Workflow:
    """`checkpoint_with_resume.main()`'s workflow (an `int` start), without its own storage: the
    host's is the run's checkpoint storage."""
    m = checkpoint_with_resume
    start = m.StartExecutor(id="start")
    worker = m.WorkerExecutor(id="worker")
    return WorkflowBuilder(start_executor=start).add_edge(start, worker).add_edge(worker, worker).build()


def writer_with_feedback() -> Workflow:
    """`agents_with_HITL.main()`: the writer, the final editor and the coordinator between them."""
    m = agents_with_HITL
    writer_agent = Agent(
        client=OpenAIChatClient(),
        name="writer_agent",
        instructions=("You are a marketing writer."),
        default_options={
            "tool_choice": "required",
        },
    )
    final_editor_agent = Agent(
        client=OpenAIChatClient(),
        name="final_editor_agent",
        instructions=(
            "You are an editor who polishes marketing copy after human approval. "
            "Correct any legal or factual issues. Return the final version even if no changes are made. "
        ),
    )
    coordinator = m.Coordinator(
        id="coordinator",
        writer_name=writer_agent.name,  # type: ignore
        final_editor_name=final_editor_agent.name,  # type: ignore
    )
    return (
        WorkflowBuilder(start_executor=writer_agent)
        .add_edge(writer_agent, coordinator)
        .add_edge(coordinator, writer_agent)
        .add_edge(final_editor_agent, coordinator)
        .add_edge(coordinator, final_editor_agent)
        .build()
    )


def city_agent() -> Agent:
    """`client_with_structured_output.non_streaming_example()`'s agent (its `response_format` is
    a per-run option there: a client asks for it with `text.format`)."""
    return Agent(
        client=OpenAIChatClient(),
        name="CityAgent",
        instructions="You are a helpful agent that describes cities in a structured format.",
    )
