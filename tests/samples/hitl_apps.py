"""`--app` factories for the vendored human-in-the-loop and tool-approval samples
(tests/samples/upstream, SOURCES.json; `agent_apps` has the checkpoint and workflow-as-agent
ones), as `apps.py` does for the others.

Each factory builds the graph its sample's `main()` builds, from the sample's own classes, agents
and tools; only the runs `main()` then makes, and its prints and `input()`s, are left out: the
host makes those and the client answers. The model client is the sample's, `OpenAIChatClient()`
(reads `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_CHAT_MODEL`).
"""

from __future__ import annotations

import importlib

from agent_framework import Agent, Workflow, WorkflowBuilder
from agent_framework.openai import OpenAIChatClient
from agent_framework.orchestrations import ConcurrentBuilder, GroupChatBuilder, SequentialBuilder

from tests.samples.upstream import (
    agents_with_approval_requests,
    agents_with_declaration_only_tools,
    concurrent_builder_tool_approval,
    concurrent_request_info,
    group_chat_builder_tool_approval,
)


def email_approvals() -> Workflow:
    """`agents_with_approval_requests.main()`: preprocessor -> email writer (approval-gated
    tools) -> conclude."""
    m = agents_with_approval_requests
    email_writer_agent = Agent(
        client=OpenAIChatClient(),
        name="EmailWriter",
        instructions=("You are an excellent email assistant. You respond to incoming emails."),
        tools=[
            m.read_historical_email_data,
            m.send_email,
            m.get_current_date,
            m.get_team_members_email_addresses,
            m.get_my_information,
        ],
    )
    email_processor = m.EmailPreprocessor(special_email_addresses={"mike@contoso.com"})
    return (
        WorkflowBuilder(start_executor=email_processor, output_from=[m.conclude_workflow])
        .add_edge(email_processor, email_writer_agent)
        .add_edge(email_writer_agent, m.conclude_workflow)
        .build()
    )


def weather_declaration_only() -> Workflow:
    """`agents_with_declaration_only_tools.main()`: one agent with a tool only the client runs."""
    m = agents_with_declaration_only_tools
    agent = Agent(
        client=OpenAIChatClient(),
        name="WeatherBot",
        instructions=(
            "You are a helpful weather assistant. "
            "When the user asks about weather, call get_user_location first, "
            "then make up a plausible forecast for that city."
        ),
        tools=[m.get_user_location],
    )
    return WorkflowBuilder(start_executor=agent).build()


def concurrent_review() -> Workflow:
    """`concurrent_request_info.main()`: three analysts, the technical one held for review, and
    the sample's LLM aggregator (its module-level client set as `main()` sets it)."""
    m = concurrent_request_info
    m._chat_client = OpenAIChatClient()
    technical_analyst = Agent(
        client=m._chat_client,
        name="technical_analyst",
        instructions=(
            "You are a technical analyst. When given a topic, provide a technical "
            "perspective focusing on implementation details, performance, and architecture. "
            "Keep your analysis to 2-3 sentences."
        ),
    )
    business_analyst = Agent(
        client=m._chat_client,
        name="business_analyst",
        instructions=(
            "You are a business analyst. When given a topic, provide a business "
            "perspective focusing on ROI, market impact, and strategic value. "
            "Keep your analysis to 2-3 sentences."
        ),
    )
    user_experience_analyst = Agent(
        client=m._chat_client,
        name="ux_analyst",
        instructions=(
            "You are a UX analyst. When given a topic, provide a user experience "
            "perspective focusing on usability, accessibility, and user satisfaction. "
            "Keep your analysis to 2-3 sentences."
        ),
    )
    return (
        ConcurrentBuilder(participants=[technical_analyst, business_analyst, user_experience_analyst])
        .with_aggregator(m.aggregate_with_synthesis)
        .with_request_info(agents=["technical_analyst"])
        .build()
    )


def group_chat_review() -> Workflow:
    """`group_chat_request_info.main()`: an agent-managed group chat that pauses before the
    pragmatist speaks."""
    client = OpenAIChatClient()
    optimist = Agent(
        client=client,
        name="optimist",
        instructions=(
            "You are an optimistic team member. You see opportunities and potential "
            "in ideas. Engage constructively with the discussion, building on others' "
            "points while maintaining a positive outlook. Keep responses to 2-3 sentences."
        ),
    )
    pragmatist = Agent(
        client=client,
        name="pragmatist",
        instructions=(
            "You are a pragmatic team member. You focus on practical implementation "
            "and realistic timelines. Sometimes you disagree with overly optimistic views. "
            "Keep responses to 2-3 sentences."
        ),
    )
    creative = Agent(
        client=client,
        name="creative",
        instructions=(
            "You are a creative team member. You propose innovative solutions and "
            "think outside the box. You may suggest alternatives to conventional approaches. "
            "Keep responses to 2-3 sentences."
        ),
    )
    orchestrator = Agent(
        client=client,
        name="orchestrator",
        instructions=(
            "You are a discussion manager coordinating a team conversation between participants. "
            "Your job is to select who speaks next.\n\n"
            "RULES:\n"
            "1. Rotate through ALL participants - do not favor any single participant\n"
            "2. Each participant should speak at least once before any participant speaks twice\n"
            "3. Continue for at least 5 rounds before ending the discussion\n"
            "4. Do NOT select the same participant twice in a row"
        ),
    )
    return (
        GroupChatBuilder(
            participants=[optimist, pragmatist, creative],
            max_rounds=6,
            orchestrator_agent=orchestrator,
        )
        .with_request_info(agents=[pragmatist])
        .build()
    )


def sequential_review() -> Workflow:
    """`sequential_request_info.main()`: drafter -> editor (held for review) -> finalizer."""
    client = OpenAIChatClient()
    drafter = Agent(
        client=client,
        name="drafter",
        instructions=(
            "You are a document drafter. When given a topic, create a brief draft (2-3 sentences)."
        ),
    )
    editor = Agent(
        client=client,
        name="editor",
        instructions=(
            "You are an editor. Review the draft and make improvements. "
            "Incorporate any human feedback that was provided."
        ),
    )
    finalizer = Agent(
        client=client,
        name="finalizer",
        instructions=(
            "You are a finalizer. Take the edited content and create a polished final version. "
            "Incorporate any additional feedback provided."
        ),
    )
    return (
        SequentialBuilder(participants=[drafter, editor, finalizer])
        .with_request_info(agents=["editor"])
        .build()
    )


def sequential_tool_approval() -> Workflow:
    """`sequential_builder_tool_approval.main()`."""
    m = importlib.import_module("tests.samples.upstream.sequential_builder_tool_approval")
    database_agent = Agent(
        client=OpenAIChatClient(),
        name="DatabaseAgent",
        instructions=(
            "You are a database assistant. You can view the database schema and execute "
            "queries. Always check the schema before running queries. Be careful with "
            "queries that modify data."
        ),
        tools=[m.get_database_schema, m.execute_database_query],
    )
    return SequentialBuilder(participants=[database_agent]).build()


def concurrent_tool_approval() -> Workflow:
    """`concurrent_builder_tool_approval.main()`: two trading agents, approval-gated trades."""
    m = concurrent_builder_tool_approval
    client = OpenAIChatClient()
    tools = [
        m.get_stock_price,
        m.get_market_sentiment,
        m.get_portfolio_balance,
        m.execute_trade,
        m.set_stop_loss,
    ]
    microsoft_agent = Agent(
        client=client,
        name="MicrosoftAgent",
        instructions=(
            "You are a personal trading assistant focused on Microsoft (MSFT). "
            "You manage my portfolio and take actions based on market data. "
            "Use stop-loss orders to manage risk."
        ),
        tools=tools,
    )
    google_agent = Agent(
        client=client,
        name="GoogleAgent",
        instructions=(
            "You are a personal trading assistant focused on Google (GOOGL). "
            "You manage my trades and portfolio based on market conditions. "
            "Use stop-loss orders to manage risk."
        ),
        tools=tools,
    )
    return ConcurrentBuilder(participants=[microsoft_agent, google_agent]).build()


def group_chat_tool_approval() -> Workflow:
    """`group_chat_builder_tool_approval.main()`: QA then DevOps (an approval-gated deploy)."""
    m = group_chat_builder_tool_approval
    client = OpenAIChatClient()
    qa_engineer = Agent(
        client=client,
        name="QAEngineer",
        instructions=(
            "You are a QA engineer responsible for running tests before deployment. "
            "Run the appropriate test suites and report results clearly."
        ),
        tools=[m.run_tests],
    )
    devops_engineer = Agent(
        client=client,
        name="DevOpsEngineer",
        instructions=(
            "You are a DevOps engineer responsible for deployments. First check staging "
            "status and create a rollback plan, then proceed with production deployment "
            "without the need for further instructions."
        ),
        tools=[m.check_staging_status, m.create_rollback_plan, m.deploy_to_production],
    )
    return GroupChatBuilder(
        participants=[qa_engineer, devops_engineer],
        max_rounds=2,
        selection_func=m.select_next_speaker,
    ).build()
