"""`--app` factories for the vendored samples of agent-framework's `03-workflows/orchestrations`
and `03-workflows/agents` (tests/samples/upstream, SOURCES.json). Each sample builds its workflow
(or its `as_agent()`) inside `main()`; each factory builds the same from the sample's own code,
line for line (the runs `main()` then makes are the host's). The model client is the sample's,
`OpenAIChatClient()`, reading `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_CHAT_MODEL` (the fake).
"""

from __future__ import annotations

from typing import Any

from agent_framework import Agent, Message, Workflow, WorkflowAgent, WorkflowBuilder, resolve_agent_id
from agent_framework.openai import OpenAIChatClient
from agent_framework.orchestrations import (
    ConcurrentBuilder,
    GroupChatBuilder,
    HandoffBuilder,
    MagenticBuilder,
    SequentialBuilder,
)

from tests.samples.upstream import (
    concurrent_custom_agent_executors,
    custom_agent_executors,
    group_chat_agent_manager,
    group_chat_simple_selector,
    handoff_autonomous,
    handoff_simple,
    handoff_workflow_as_agent,
    magentic_checkpoint,
    sequential_custom_executors,
)

WRITER = "You are a concise copywriter. Provide a single, punchy marketing sentence based on the prompt."
REVIEWER = "You are a thoughtful reviewer. Give brief feedback on the previous assistant message."
RESEARCHER = (
    "You're an expert market and product researcher. Given a prompt, provide concise, factual insights,"
    " opportunities, and risks."
)
MARKETER = (
    "You're a creative marketing strategist. Craft compelling value propositions and target messaging"
    " aligned to the prompt."
)
LEGAL = (
    "You're a cautious legal/compliance reviewer. Highlight constraints, disclaimers, and policy concerns"
    " based on the prompt."
)


def _writer_reviewer(client: OpenAIChatClient) -> tuple[Agent, Agent]:
    return (
        Agent(client=client, instructions=WRITER, name="writer"),
        Agent(client=client, instructions=REVIEWER, name="reviewer"),
    )


def _experts(client: OpenAIChatClient) -> list[Agent]:
    return [
        Agent(client=client, instructions=RESEARCHER, name="researcher"),
        Agent(client=client, instructions=MARKETER, name="marketer"),
        Agent(client=client, instructions=LEGAL, name="legal"),
    ]


def sequential_agents() -> Workflow:
    """`sequential_agents.main()`: writer -> reviewer, every agent's response an output."""
    writer, reviewer = _writer_reviewer(OpenAIChatClient())
    return SequentialBuilder(participants=[writer, reviewer], output_from="all").build()


def sequential_with_summarizer() -> Workflow:
    """`sequential_custom_executors.main()`: a content agent, then the sample's Summarizer."""
    content = Agent(
        client=OpenAIChatClient(),
        instructions="Produce a concise paragraph answering the user's request.",
        name="content",
    )
    summarizer = sequential_custom_executors.Summarizer(id="summarizer")
    return SequentialBuilder(participants=[content, summarizer]).build()


def sequential_chain_only() -> Workflow:
    """`sequential_chain_only_agent_responses.main()`: writer -> translator -> reviewer."""
    client = OpenAIChatClient()
    writer = Agent(client=client, instructions=WRITER, name="writer")
    translator = Agent(
        client=client,
        instructions="You are a translator. Translate the given text into French. Output only the translation.",
        name="translator",
    )
    reviewer = Agent(
        client=client,
        instructions="You are a reviewer. Evaluate the quality of the marketing tagline.",
        name="reviewer",
    )
    return SequentialBuilder(
        participants=[writer, translator, reviewer],
        chain_only_agent_responses=True,
        intermediate_output_from=[writer, translator],
    ).build()


def concurrent_agents() -> Workflow:
    """`concurrent_agents.main()`: three experts, the default aggregator."""
    return ConcurrentBuilder(participants=_experts(OpenAIChatClient())).build()


def concurrent_custom_aggregator() -> Workflow:
    """`concurrent_custom_aggregator.main()`: its `summarize_results` closure, verbatim."""
    client = OpenAIChatClient()

    async def summarize_results(results: list[Any]) -> str:
        expert_sections: list[str] = []
        for r in results:
            try:
                messages = getattr(r.agent_response, "messages", [])
                final_text = (
                    messages[-1].text if messages and hasattr(messages[-1], "text") else "(no content)"
                )
                expert_sections.append(f"{getattr(r, 'executor_id', 'expert')}:\n{final_text}")
            except Exception as e:
                expert_sections.append(
                    f"{getattr(r, 'executor_id', 'expert')}: (error: {type(e).__name__}: {e})"
                )
        system_msg = Message(
            "system",
            contents=[
                (
                    "You are a helpful assistant that consolidates multiple domain expert outputs "
                    "into one cohesive, concise summary with clear takeaways. Keep it under 200 words."
                )
            ],
        )
        user_msg = Message("user", contents=["\n\n".join(expert_sections)])
        response = await client.get_response([system_msg, user_msg])
        return response.messages[-1].text if response.messages else ""

    return ConcurrentBuilder(participants=_experts(client)).with_aggregator(summarize_results).build()


def concurrent_executors() -> Workflow:
    """`concurrent_custom_agent_executors.main()`: the sample's three executor classes."""
    m = concurrent_custom_agent_executors
    client = OpenAIChatClient()
    participants = [m.ResearcherExec(client), m.MarketerExec(client), m.LegalExec(client)]
    return ConcurrentBuilder(participants=participants).build()


def group_chat_round_robin() -> Workflow:
    """`group_chat_simple_selector.main()`: four agents, its round-robin selector."""
    client = OpenAIChatClient()
    expert = Agent(
        name="PythonExpert",
        instructions=(
            "You are an expert in Python in a workgroup. "
            "Your job is to answer Python related questions and refine your answer "
            "based on feedback from all the other participants."
        ),
        client=client,
    )
    verifier = Agent(
        name="AnswerVerifier",
        instructions=(
            "You are a programming expert in a workgroup. "
            f"Your job is to review the answer provided by {expert.name} and point "
            "out statements that are technically true but practically dangerous."
            "If there is nothing woth pointing out, respond with 'The answer looks good to me.'"
        ),
        client=client,
    )
    clarifier = Agent(
        name="AnswerClarifier",
        instructions=(
            "You are an accessibility expert in a workgroup. "
            f"Your job is to review the answer provided by {expert.name} and point "
            "out jargons or complex terms that may be difficult for a beginner to understand."
            "If there is nothing worth pointing out, respond with 'The answer looks clear to me.'"
        ),
        client=client,
    )
    skeptic = Agent(
        name="Skeptic",
        instructions=(
            "You are a devil's advocate in a workgroup. "
            f"Your job is to review the answer provided by {expert.name} and point "
            "out caveats, exceptions, and alternative perspectives."
            "If there is nothing worth pointing out, respond with 'I have no further questions.'"
        ),
        client=client,
    )
    return (
        GroupChatBuilder(
            participants=[expert, verifier, clarifier, skeptic],
            termination_condition=lambda conversation: len(conversation) >= 6,
            intermediate_output_from=[expert, verifier, clarifier, skeptic],
            selection_func=group_chat_simple_selector.round_robin_selector,
        )
        .with_termination_condition(lambda conversation: len(conversation) >= 6)
        .build()
    )


def _researcher_writer(client: OpenAIChatClient) -> tuple[Agent, Agent]:
    researcher = Agent(
        name="Researcher",
        description="Collects relevant background information",
        instructions="Gather concise facts that help a teammate answer the question.",
        client=client,
    )
    writer = Agent(
        name="Writer",
        description="Synthesizes polished answers from gathered information",
        instructions="Compose clear and structured answers using any notes provided.",
        client=client,
    )
    return researcher, writer


def group_chat_with_manager() -> Workflow:
    """`group_chat_agent_manager.main()`: an Orchestrator agent picks Researcher or Writer."""
    client = OpenAIChatClient()
    orchestrator_agent = Agent(
        name="Orchestrator",
        description="Coordinates multi-agent collaboration by selecting speakers",
        instructions=group_chat_agent_manager.ORCHESTRATOR_AGENT_INSTRUCTIONS,
        client=client,
    )
    researcher, writer = _researcher_writer(client)
    return (
        GroupChatBuilder(
            participants=[researcher, writer],
            termination_condition=lambda messages: sum(1 for msg in messages if msg.role == "assistant") >= 4,
            intermediate_output_from=[researcher, writer],
            orchestrator_agent=orchestrator_agent,
        )
        .with_termination_condition(
            lambda messages: sum(1 for msg in messages if msg.role == "assistant") >= 4
        )
        .build()
    )


def _magentic_team(
    client: OpenAIChatClient, coder: OpenAIChatClient, manager: OpenAIChatClient
) -> tuple[Agent, ...]:
    researcher_agent = Agent(
        name="ResearcherAgent",
        description="Specialist in research and information gathering",
        instructions=(
            "You are a Researcher. You find information without additional computation or quantitative analysis."
        ),
        client=client,
    )
    coder_agent = Agent(
        name="CoderAgent",
        description="A helpful assistant that writes and executes code to process and analyze data.",
        instructions="You solve questions using code. Please provide detailed analysis and computation process.",
        client=coder,
        tools=coder.get_code_interpreter_tool(),
    )
    manager_agent = Agent(
        name="MagenticManager",
        description="Orchestrator that coordinates the research and coding workflow",
        instructions="You coordinate a team to complete complex tasks efficiently.",
        client=manager,
    )
    return researcher_agent, coder_agent, manager_agent


def magentic() -> Workflow:
    """`magentic.main()`: a researcher and a coder (with the hosted code interpreter tool)."""
    client = OpenAIChatClient()
    researcher_agent, coder_agent, manager_agent = _magentic_team(client, client, client)
    return MagenticBuilder(
        participants=[researcher_agent, coder_agent],
        intermediate_output_from=[researcher_agent, coder_agent],
        manager_agent=manager_agent,
        max_round_count=10,
        max_stall_count=3,
        max_reset_count=2,
    ).build()


def magentic_plan_review() -> Workflow:
    """`magentic_checkpoint.build_workflow()`, the host's storage in place of its files."""
    return magentic_checkpoint.build_workflow(None)  # type: ignore[arg-type]


def handoff_simple_workflow() -> Workflow:
    """`handoff_simple.main()`: triage and three specialists with their tools."""
    triage, refund, order, support = handoff_simple.create_agents(OpenAIChatClient())
    return (
        HandoffBuilder(
            name="customer_support_handoff",
            participants=[triage, refund, order, support],
            termination_condition=lambda conversation: (
                len(conversation) > 0 and "welcome" in conversation[-1].text.lower()
            ),
        )
        .with_start_agent(triage)
        .build()
    )


def handoff_autonomous_workflow() -> Workflow:
    """`handoff_autonomous.main()`: coordinator and two specialists in autonomous mode."""
    coordinator, research_agent, summary_agent = handoff_autonomous.create_agents(OpenAIChatClient())
    return (
        HandoffBuilder(
            name="autonomous_iteration_handoff",
            participants=[coordinator, research_agent, summary_agent],
            termination_condition=lambda conv: (
                sum(1 for msg in conv if msg.author_name == "coordinator" and msg.role == "assistant") >= 5
            ),
        )
        .with_start_agent(coordinator)
        .add_handoff(coordinator, [research_agent, summary_agent])
        .add_handoff(research_agent, [coordinator])
        .add_handoff(summary_agent, [coordinator])
        .with_autonomous_mode(
            turn_limits={
                resolve_agent_id(coordinator): 5,
                resolve_agent_id(research_agent): 10,
                resolve_agent_id(summary_agent): 5,
            }
        )
        .build()
    )


def sequential_as_agent() -> WorkflowAgent:
    writer, reviewer = _writer_reviewer(OpenAIChatClient())
    return SequentialBuilder(participants=[writer, reviewer]).build().as_agent()


def concurrent_as_agent() -> WorkflowAgent:
    return ConcurrentBuilder(participants=_experts(OpenAIChatClient())).build().as_agent()


def group_chat_as_agent() -> WorkflowAgent:
    researcher = Agent(
        name="Researcher",
        description="Collects relevant background information.",
        instructions="Gather concise facts that help a teammate answer the question.",
        client=OpenAIChatClient(),
    )
    writer = Agent(
        name="Writer",
        description="Synthesizes a polished answer using the gathered notes.",
        instructions="Compose clear and structured answers using any notes provided.",
        client=OpenAIChatClient(),
    )
    workflow = GroupChatBuilder(
        participants=[researcher, writer],
        intermediate_output_from=[researcher, writer],
        orchestrator_agent=Agent(
            client=OpenAIChatClient(),
            name="Orchestrator",
            instructions="You coordinate a team conversation to solve the user's task.",
        ),
    ).build()
    return workflow.as_agent()


def handoff_as_agent() -> WorkflowAgent:
    triage, refund, order, support = handoff_workflow_as_agent.create_agents(OpenAIChatClient())
    return (
        HandoffBuilder(
            name="customer_support_handoff",
            participants=[triage, refund, order, support],
            termination_condition=lambda conversation: (
                len(conversation) > 0 and "welcome" in conversation[-1].text.lower()
            ),
        )
        .with_start_agent(triage)
        .build()
        .as_agent()
    )


def magentic_as_agent() -> WorkflowAgent:
    researcher_agent, coder_agent, manager_agent = _magentic_team(
        OpenAIChatClient(), OpenAIChatClient(), OpenAIChatClient()
    )
    workflow = MagenticBuilder(
        participants=[researcher_agent, coder_agent],
        intermediate_output_from=[researcher_agent, coder_agent],
        manager_agent=manager_agent,
        max_round_count=10,
        max_stall_count=3,
        max_reset_count=2,
    ).build()
    return workflow.as_agent()


def custom_agent_executors_workflow() -> Workflow:
    """`custom_agent_executors.main()`: the sample's Writer and Reviewer executors."""
    writer = custom_agent_executors.Writer()
    reviewer = custom_agent_executors.Reviewer()
    return WorkflowBuilder(start_executor=writer).add_edge(writer, reviewer).build()
