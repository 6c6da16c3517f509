"""`--app` factories for the 03-workflows samples tests/samples/test_more_workflow_samples.py
hosts (tests/samples/upstream, SOURCES.json): each builds the sample's workflow from its own code,
line for line as its `main()` does (the runs `main()` then makes are the host's; the
visualization sample's `WorkflowViz` output is not served). The model client is the sample's,
`OpenAIChatClient()`, reading `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_CHAT_MODEL` (the fake).
"""

from __future__ import annotations

from agent_framework import Agent, AgentExecutor, Workflow, WorkflowBuilder
from agent_framework.openai import OpenAIChatClient
from agent_framework.orchestrations import GroupChatBuilder, MagenticBuilder

from tests.samples.upstream import (
    azure_chat_agents_and_executor,
    concurrent_with_visualization,
    executor_io_observation,
    group_chat_philosophical_debate,
)


def agents_and_executor() -> Workflow:
    """`azure_chat_agents_and_executor.main()`: research_agent -> enrich_with_references -> final_editor_agent."""
    m = azure_chat_agents_and_executor
    research_agent = Agent(
        client=OpenAIChatClient(),
        name="research_agent",
        instructions=(
            "Produce a short, bullet-style briefing with two actionable ideas. Label the section as 'Initial Draft'."
        ),
    )

    final_editor_agent = Agent(
        client=OpenAIChatClient(),
        name="final_editor_agent",
        instructions=(
            "Use all conversation context (including external notes) to produce the final answer. "
            "Merge the draft and extra note into a concise recommendation under 150 words."
        ),
    )

    return (
        WorkflowBuilder(start_executor=research_agent)
        .add_edge(research_agent, m.enrich_with_references)
        .add_edge(m.enrich_with_references, final_editor_agent)
        .build()
    )


def writer_reviewer_streaming() -> Workflow:
    """`azure_chat_agents_streaming.main()`: writer then reviewer."""
    _writer_client = OpenAIChatClient()
    writer_agent = Agent(
        client=_writer_client,
        instructions=(
            "You are an excellent content writer. You create new content and edit contents based on the feedback."
        ),
        name="writer",
    )

    _reviewer_client = OpenAIChatClient()
    reviewer_agent = Agent(
        client=_reviewer_client,
        instructions=(
            "You are an excellent content reviewer."
            "Provide actionable feedback to the writer about the provided content."
            "Provide the feedback in the most concise manner possible."
        ),
        name="reviewer",
    )

    return WorkflowBuilder(start_executor=writer_agent).add_edge(writer_agent, reviewer_agent).build()


def philosophical_debate() -> Workflow:
    """`group_chat_philosophical_debate.main()`: a Moderator agent and eight participants."""
    m = group_chat_philosophical_debate
    moderator = Agent(
        name="Moderator",
        description="Guides philosophical discussion by selecting next speaker",
        instructions="""
You are a thoughtful moderator guiding a philosophical discussion on the topic handed to you by the user.

Your participants bring diverse global perspectives. Select speakers strategically to:
- Create natural conversation flow and responses to previous points
- Ensure all voices are heard throughout the discussion
- Build on themes and contrasts that emerge
- Allow for respectful challenges and counterpoints
- Guide toward meaningful conclusions

Select speakers who can:
1. Respond directly to points just made
2. Introduce fresh perspectives when needed
3. Bridge or contrast different viewpoints
4. Deepen the philosophical exploration

Finish when:
- Multiple rounds have occurred (at least 6-8 exchanges)
- Key themes have been explored from different angles
- Natural conclusion or synthesis has emerged
- Diminishing returns in new insights

In your final_message, provide a brief synthesis highlighting key themes that emerged.
""",
        client=m._get_chat_client(),
    )

    farmer = Agent(
        name="Farmer",
        description="A rural farmer from Southeast Asia",
        instructions="""
You're a farmer from Southeast Asia. Your life is deeply connected to land and family.
You value tradition and sustainability. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use concrete examples from your experience
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=m._get_chat_client(),
    )

    developer = Agent(
        name="Developer",
        description="An urban software developer from the United States",
        instructions="""
You're a software developer from the United States. Your life is fast-paced and technology-driven.
You value innovation, freedom, and work-life balance. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use concrete examples from your experience
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=m._get_chat_client(),
    )

    teacher = Agent(
        name="Teacher",
        description="A retired history teacher from Eastern Europe",
        instructions="""
You're a retired history teacher from Eastern Europe. You bring historical and philosophical
perspectives to discussions. You value legacy, learning, and cultural continuity.
You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use concrete examples from history or your teaching experience
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=m._get_chat_client(),
    )

    activist = Agent(
        name="Activist",
        description="A young activist from South America",
        instructions="""
You're a young activist from South America. You focus on social justice, environmental rights,
and generational change. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use concrete examples from your activism
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=m._get_chat_client(),
    )

    spiritual_leader = Agent(
        name="SpiritualLeader",
        description="A spiritual leader from the Middle East",
        instructions="""
You're a spiritual leader from the Middle East. You provide insights grounded in religion,
morality, and community service. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use examples from spiritual teachings or community work
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=m._get_chat_client(),
    )

    artist = Agent(
        name="Artist",
        description="An artist from Africa",
        instructions="""
You're an artist from Africa. You view life through creative expression, storytelling,
and collective memory. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use examples from your art or cultural traditions
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=m._get_chat_client(),
    )

    immigrant = Agent(
        name="Immigrant",
        description="An immigrant entrepreneur from Asia living in Canada",
        instructions="""
You're an immigrant entrepreneur from Asia living in Canada. You balance tradition with adaptation.
You focus on family success, risk, and opportunity. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use examples from your immigrant and entrepreneurial journey
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=m._get_chat_client(),
    )

    doctor = Agent(
        name="Doctor",
        description="A doctor from Scandinavia",
        instructions="""
You're a doctor from Scandinavia. Your perspective is shaped by public health, equity,
and structured societal support. You are in a philosophical debate.

Share your perspective authentically. Feel free to:
- Challenge other participants respectfully
- Build on points others have made
- Use examples from healthcare and societal systems
- Keep responses thoughtful but concise (2-4 sentences)
""",
        client=m._get_chat_client(),
    )

    # termination_condition: stop after 10 assistant messages
    # Mark participant responses as intermediate so the stream shows the
    # conversation as it unfolds while the orchestrator's transcript remains the
    # terminal workflow output.
    return (
        GroupChatBuilder(
            participants=[farmer, developer, teacher, activist, spiritual_leader, artist, immigrant, doctor],
            termination_condition=lambda messages: (
                sum(1 for msg in messages if msg.role == "assistant") >= 10
            ),
            intermediate_output_from=[
                "all",
            ],
            orchestrator_agent=moderator,
        )
        .with_termination_condition(
            lambda messages: sum(1 for msg in messages if msg.role == "assistant") >= 10
        )
        .build()
    )


def magentic_human_plan_review() -> Workflow:
    """`magentic_human_plan_review.main()`: a researcher and an analyst, plan review enabled."""
    client = OpenAIChatClient()

    researcher_agent = Agent(
        name="ResearcherAgent",
        description="Specialist in research and information gathering",
        instructions="You are a Researcher. You find information and gather facts.",
        client=client,
    )

    analyst_agent = Agent(
        name="AnalystAgent",
        description="Data analyst who processes and summarizes research findings",
        instructions="You are an Analyst. You analyze findings and create summaries.",
        client=client,
    )

    manager_agent = Agent(
        name="MagenticManager",
        description="Orchestrator that coordinates the workflow",
        instructions="You coordinate a team to complete tasks efficiently.",
        client=client,
    )

    return MagenticBuilder(
        participants=[researcher_agent, analyst_agent],
        enable_plan_review=True,
        intermediate_output_from=[researcher_agent, analyst_agent],
        manager_agent=manager_agent,
        max_round_count=10,
        max_stall_count=1,
        max_reset_count=2,
    ).build()


def executor_io() -> Workflow:
    """`executor_io_observation.main()`: upper_case -> reverse_text."""
    m = executor_io_observation
    upper_case = m.UpperCaseExecutor()
    reverse_text = m.ReverseTextExecutor()

    return WorkflowBuilder(start_executor=upper_case).add_edge(upper_case, reverse_text).build()


def concurrent_visualized() -> Workflow:
    """`concurrent_with_visualization.main()`: dispatcher -> (researcher, marketer, legal) -> aggregator."""
    m = concurrent_with_visualization
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

    dispatcher = m.DispatchToExperts(id="dispatcher")
    aggregator = m.AggregateInsights(id="aggregator")

    return (
        WorkflowBuilder(start_executor=dispatcher)
        .add_fan_out_edges(dispatcher, [researcher, marketer, legal])
        .add_fan_in_edges([researcher, marketer, legal], aggregator)
        .build()
    )
