"""`--app` factories for agent-framework's own agent samples (01-get-started 01-04 and a set of
02-agents: tools, approvals, middleware, context providers, runtime JSON schema), vendored in
tests/samples/upstream (SOURCES.json). Each sample builds its agent inside `main()` (or a helper
it calls); each factory here builds the same agent, line for line, from the sample's own tools,
middleware and providers.

Importing this module makes the process's stdout line-buffered: the samples report their tool
runs with `print`, and a server killed -9 (tests/samples/test_agent_samples_processes.py) would
lose what a block-buffered stdout still held.
"""

from __future__ import annotations

import importlib
import io
import sys
from types import ModuleType

from agent_framework import Agent
from agent_framework.openai import OpenAIChatClient, OpenAIChatCompletionClient, OpenAIChatOptions

from tests.samples.upstream import (
    chat_completion_client_with_runtime_json_schema,
    class_based_middleware,
    function_based_middleware,
    function_tool_with_approval,
    function_tool_with_approval_and_sessions,
    simple_context_provider,
)

if isinstance(sys.stdout, io.TextIOWrapper):
    sys.stdout.reconfigure(line_buffering=True)


def _get_started(name: str) -> ModuleType:
    """01-get-started's modules (their names start with a digit)."""
    return importlib.import_module(f"tests.samples.upstream.{name}")


def hello_agent() -> Agent:
    """`01_hello_agent.main()`'s agent."""
    client = OpenAIChatClient()
    return Agent(
        client=client,
        name="HelloAgent",
        instructions="You are a friendly assistant. Keep your answers brief.",
    )


def weather_agent() -> Agent:
    """`02_add_tools.main()`'s agent (its `get_weather` tool, run by the server)."""
    m = _get_started("02_add_tools")
    client = OpenAIChatClient()
    return Agent(
        client=client,
        name="WeatherAgent",
        instructions="You are a helpful weather agent. Use the get_weather tool to answer questions.",
        tools=[m.get_weather],
    )


def conversation_agent() -> Agent:
    """`03_multi_turn.main()`'s agent (its session is the server's: previous_response_id or a
    conversation)."""
    client = OpenAIChatClient()
    return Agent(
        client=client,
        name="ConversationAgent",
        instructions="You are a friendly assistant. Keep your answers brief.",
    )


def memory_agent() -> Agent:
    """`04_memory.main()`'s agent with its `UserMemoryProvider` (state kept in the session)."""
    m = _get_started("04_memory")
    client = OpenAIChatClient()
    return Agent(
        client=client,
        name="MemoryAgent",
        instructions="You are a friendly assistant.",
        context_providers=[m.UserMemoryProvider()],
    )


def weather_with_approval() -> Agent:
    """`function_tool_with_approval.run_weather_agent_with_approval()`'s agent: `get_weather`
    runs, `get_weather_detail` waits for approval."""
    m = function_tool_with_approval
    return Agent(
        client=OpenAIChatClient(),
        name="WeatherAgent",
        instructions=(
            "You are a helpful weather assistant. Use the get_weather tool to provide weather information."
        ),
        tools=[m.get_weather, m.get_weather_detail],
    )


def calendar_agent() -> Agent:
    """`function_tool_with_approval_and_sessions.approval_example()`'s agent."""
    m = function_tool_with_approval_and_sessions
    return Agent(
        client=OpenAIChatClient(),
        name="CalendarAgent",
        instructions="You are a helpful calendar assistant.",
        tools=[m.add_to_calendar],
    )


def class_middleware_agent() -> Agent:
    """`class_based_middleware.main()`'s agent (agent and function middleware classes)."""
    m = class_based_middleware
    return Agent(
        client=OpenAIChatClient(),
        name="WeatherAgent",
        instructions="You are a helpful weather assistant.",
        tools=m.get_weather,
        middleware=[m.SecurityAgentMiddleware(), m.LoggingFunctionMiddleware()],
    )


def function_middleware_agent() -> Agent:
    """`function_based_middleware.main()`'s agent (agent and function middleware functions)."""
    m = function_based_middleware
    return Agent(
        client=OpenAIChatClient(),
        name="WeatherAgent",
        instructions="You are a helpful weather assistant.",
        tools=m.get_weather,
        middleware=[m.security_agent_middleware, m.logging_function_middleware],
    )


def user_info_agent() -> Agent:
    """`simple_context_provider.main()`'s agent with its `UserInfoMemory` (a registered
    pydantic type in the session state; the provider calls the model itself after each run)."""
    m = simple_context_provider
    client = OpenAIChatClient()
    context_name = m.UserInfoMemory.DEFAULT_SOURCE_ID
    memory_provider = m.UserInfoMemory(context_name, client=client)
    return Agent(
        client=client,
        instructions="You are a friendly assistant. Always address the user by their name.",
        context_providers=[memory_provider],
    )


def runtime_schema_agent() -> Agent:
    """`chat_completion_client_with_runtime_json_schema.non_streaming_example()`'s agent (its
    `response_format` is a per-run option there: a client asks for it with `text.format`)."""
    assert chat_completion_client_with_runtime_json_schema.runtime_schema
    return Agent(
        client=OpenAIChatCompletionClient[OpenAIChatOptions](),
        name="RuntimeSchemaAgent",
        instructions="Return only JSON that matches the provided schema. Do not add commentary.",
    )
