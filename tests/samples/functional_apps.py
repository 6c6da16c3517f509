"""`--app` factories for the vendored functional, control-flow, composition and state samples
(tests/samples/upstream, SOURCES.json), as tests/samples/apps.py does for the others.

Samples that build their workflow inside `main()` get a factory here that builds the same graph
from the sample's own classes, agents and helpers, line for line as `main()` does (the runs
`main()` then makes are the host's to make). Samples whose workflow is a module-level `@workflow`
or a `create_workflow()` / `build_workflow()` function are named by `--app` directly.
"""

from __future__ import annotations

from agent_framework import (
    AgentExecutor,
    Case,
    Default,
    Workflow,
    WorkflowBuilder,
    WorkflowExecutor,
)
from agent_framework.orchestrations import SequentialBuilder

from tests.samples.upstream import (
    aggregate_results_of_different_types,
    edge_condition,
    intermediate_vs_terminal_outputs,
    map_reduce_and_visualization,
    multi_selection_edge_group,
    simple_loop,
    state_with_agents,
    step1_executors_and_edges,
    step2_agents_in_a_workflow,
    sub_workflow_basics,
    sub_workflow_kwargs,
    sub_workflow_parallel_requests,
    sub_workflow_request_interception,
    switch_case_edge_group,
    workflow_kwargs_global,
)


def exclamation() -> Workflow:
    """`step1_executors_and_edges.main()`'s second workflow (explicit `@handler` types)."""
    m = step1_executors_and_edges
    upper_case = m.UpperCase(id="upper_case_executor")
    exclamation_adder = m.ExclamationAdder(id="exclamation_adder")
    return (
        WorkflowBuilder(start_executor=upper_case)
        .add_edge(upper_case, exclamation_adder)
        .add_edge(exclamation_adder, m.reverse_text)
        .build()
    )


def writer_reviewer() -> Workflow:
    """`step2_agents_in_a_workflow.main()` (step3_streaming's `main()` builds the same graph)."""
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatClient

    assert step2_agents_in_a_workflow  # the sample this mirrors
    client = OpenAIChatClient()
    writer_agent = Agent(
        client=client,
        instructions=(
            "You are an excellent content writer. You create new content and edit contents based on the feedback."
        ),
        name="writer",
    )
    reviewer_agent = Agent(
        client=client,
        instructions=(
            "You are an excellent content reviewer."
            "Provide actionable feedback to the writer about the provided content."
            "Provide the feedback in the most concise manner possible."
        ),
        name="reviewer",
    )
    return WorkflowBuilder(start_executor=writer_agent).add_edge(writer_agent, reviewer_agent).build()


def spam_edge_condition() -> Workflow:
    """`edge_condition.main()`."""
    m = edge_condition
    spam_detection_agent = AgentExecutor(m.create_spam_detector_agent())
    email_assistant_agent = AgentExecutor(m.create_email_assistant_agent())
    return (
        WorkflowBuilder(start_executor=spam_detection_agent)
        .add_edge(spam_detection_agent, m.to_email_assistant_request, condition=m.get_condition(False))
        .add_edge(m.to_email_assistant_request, email_assistant_agent)
        .add_edge(email_assistant_agent, m.handle_email_response)
        .add_edge(spam_detection_agent, m.handle_spam_classifier_response, condition=m.get_condition(True))
        .build()
    )


def spam_switch_case() -> Workflow:
    """`switch_case_edge_group.main()`."""
    m = switch_case_edge_group
    spam_detection_agent = AgentExecutor(m.create_spam_detection_agent())
    email_assistant_agent = AgentExecutor(m.create_email_assistant_agent())
    return (
        WorkflowBuilder(start_executor=m.store_email)
        .add_edge(m.store_email, spam_detection_agent)
        .add_edge(spam_detection_agent, m.to_detection_result)
        .add_switch_case_edge_group(
            m.to_detection_result,
            [
                Case(condition=m.get_case("NotSpam"), target=m.submit_to_email_assistant),
                Case(condition=m.get_case("Spam"), target=m.handle_spam),
                Default(target=m.handle_uncertain),
            ],
        )
        .add_edge(m.submit_to_email_assistant, email_assistant_agent)
        .add_edge(email_assistant_agent, m.finalize_and_send)
        .build()
    )


def email_triage() -> Workflow:
    """`multi_selection_edge_group.main()` (its `select_targets` is a local of `main()`: copied)."""
    m = multi_selection_edge_group
    email_analysis_agent = AgentExecutor(m.create_email_analysis_agent())
    email_assistant_agent = AgentExecutor(m.create_email_assistant_agent())
    email_summary_agent = AgentExecutor(m.create_email_summary_agent())

    def select_targets(analysis: m.AnalysisResult, target_ids: list[str]) -> list[str]:
        handle_spam_id, submit_to_email_assistant_id, summarize_email_id, handle_uncertain_id = target_ids
        if analysis.spam_decision == "Spam":
            return [handle_spam_id]
        if analysis.spam_decision == "NotSpam":
            targets = [submit_to_email_assistant_id]
            if analysis.email_length > m.LONG_EMAIL_THRESHOLD:
                targets.append(summarize_email_id)
            return targets
        return [handle_uncertain_id]

    return (
        WorkflowBuilder(start_executor=m.store_email)
        .add_edge(m.store_email, email_analysis_agent)
        .add_edge(email_analysis_agent, m.to_analysis_result)
        .add_multi_selection_edge_group(
            m.to_analysis_result,
            [m.handle_spam, m.submit_to_email_assistant, m.summarize_email, m.handle_uncertain],
            selection_func=select_targets,
        )
        .add_edge(m.submit_to_email_assistant, email_assistant_agent)
        .add_edge(email_assistant_agent, m.finalize_and_send)
        .add_edge(m.summarize_email, email_summary_agent)
        .add_edge(email_summary_agent, m.merge_summary)
        .add_edge(
            m.to_analysis_result,
            m.database_access,
            condition=lambda r: r.email_length <= m.LONG_EMAIL_THRESHOLD,
        )
        .add_edge(m.merge_summary, m.database_access)
        .build()
    )


def guess_loop() -> Workflow:
    """`simple_loop.main()`: the guesser (an `Enum` start), the judge agent and the loop."""
    m = simple_loop
    guess_number = m.GuessNumberExecutor((1, 100), "guess_number")
    judge_agent = AgentExecutor(m.create_judge_agent())
    submit_judge = m.SubmitToJudgeAgent(judge_agent_id="judge_agent", target=30)
    parse_judge = m.ParseJudgeResponse(id="parse_judge")
    return (
        WorkflowBuilder(start_executor=guess_number)
        .add_edge(guess_number, submit_judge)
        .add_edge(submit_judge, judge_agent)
        .add_edge(judge_agent, parse_judge)
        .add_edge(parse_judge, guess_number)
        .build()
    )


def upper_reverse() -> Workflow:
    """`sequential_executors.main()`."""
    from tests.samples.upstream import sequential_executors as m

    upper_case_executor = m.UpperCaseExecutor(id="upper_case_executor")
    reverse_text_executor = m.ReverseTextExecutor(id="reverse_text_executor")
    return (
        WorkflowBuilder(start_executor=upper_case_executor)
        .add_edge(upper_case_executor, reverse_text_executor)
        .build()
    )


def upper_reverse_functions() -> Workflow:
    """`sequential_streaming.main()`."""
    from tests.samples.upstream import sequential_streaming as m

    return WorkflowBuilder(start_executor=m.to_upper_case).add_edge(m.to_upper_case, m.reverse_text).build()


def labelled_outputs() -> Workflow:
    """`intermediate_vs_terminal_outputs.main()`'s workflow."""
    m = intermediate_vs_terminal_outputs
    return (
        WorkflowBuilder(
            start_executor=m.planner,
            output_from=[m.answerer],
            intermediate_output_from=[m.planner, m.researcher],
        )
        .add_edge(m.planner, m.researcher)
        .add_edge(m.researcher, m.answerer)
        .build()
    )


def text_processing() -> Workflow:
    """`sub_workflow_basics.main()` (a `list[str]` start), but for the line marked below."""
    m = sub_workflow_basics
    orchestrator = m.TextProcessingOrchestrator()
    # Not in the sample: its `results` is a class attribute, one list every instance appends to,
    # so a second run in the same process (hosted or not) never reaches `expected_count`.
    orchestrator.results = []
    sub_workflow_executor = m.create_sub_workflow()
    return (
        WorkflowBuilder(start_executor=orchestrator)
        .add_edge(orchestrator, sub_workflow_executor)
        .add_edge(sub_workflow_executor, orchestrator)
        .build()
    )


def data_subworkflow() -> Workflow:
    """`sub_workflow_kwargs.main()`: a Sequential workflow nesting one around its agent."""
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatClient

    m = sub_workflow_kwargs
    client = OpenAIChatClient()
    inner_agent = Agent(
        client=client,
        name="data_agent",
        instructions=(
            "You are a data access agent. Use the available tools to help users. "
            "When asked to fetch data, use get_authenticated_data. "
            "When asked to call a service, use call_configured_service."
        ),
        tools=[m.get_authenticated_data, m.call_configured_service],
    )
    inner_workflow = SequentialBuilder(participants=[inner_agent]).build()
    subworkflow_executor = WorkflowExecutor(workflow=inner_workflow, id="data_subworkflow")
    return SequentialBuilder(participants=[subworkflow_executor]).build()


def resource_requests() -> Workflow:
    """`sub_workflow_parallel_requests.main()`."""
    m = sub_workflow_parallel_requests
    resource_allocator = m.ResourceAllocator("resource_allocator")
    policy_engine = m.PolicyEngine("policy_engine")
    sub_workflow_executor = WorkflowExecutor(
        m.build_resource_request_distribution_workflow(),
        "sub_workflow_executor",
        allow_direct_output=True,
    )
    return (
        WorkflowBuilder(start_executor=sub_workflow_executor)
        .add_edge(sub_workflow_executor, resource_allocator)
        .add_edge(resource_allocator, sub_workflow_executor)
        .add_edge(sub_workflow_executor, policy_engine)
        .add_edge(policy_engine, sub_workflow_executor)
        .build()
    )


def smart_email() -> Workflow:
    """`sub_workflow_request_interception.main()`."""
    m = sub_workflow_request_interception
    approved_domains = {"example.com", "company.com"}
    smart_email_orchestrator = m.SmartEmailOrchestrator(
        id="smart_email_orchestrator", approved_domains=approved_domains
    )
    email_delivery = m.EmailDelivery(id="email_delivery")
    email_validation_workflow = WorkflowExecutor(
        m.build_email_address_validation_workflow(), id="email_validation_workflow"
    )
    return (
        WorkflowBuilder(start_executor=smart_email_orchestrator)
        .add_edge(smart_email_orchestrator, email_validation_workflow)
        .add_edge(email_validation_workflow, smart_email_orchestrator)
        .add_edge(smart_email_orchestrator, email_delivery)
        .build()
    )


def spam_with_state() -> Workflow:
    """`state_with_agents.main()`."""
    m = state_with_agents
    spam_detection_agent = m.create_spam_detection_agent()
    email_assistant_agent = m.create_email_assistant_agent()
    return (
        WorkflowBuilder(start_executor=m.store_email)
        .add_edge(m.store_email, spam_detection_agent)
        .add_edge(spam_detection_agent, m.to_detection_result)
        .add_edge(m.to_detection_result, m.submit_to_email_assistant, condition=m.get_condition(False))
        .add_edge(m.to_detection_result, m.handle_spam, condition=m.get_condition(True))
        .add_edge(m.submit_to_email_assistant, email_assistant_agent)
        .add_edge(email_assistant_agent, m.finalize_and_send)
        .build()
    )


def researcher_writer() -> Workflow:
    """`workflow_kwargs_global.main()` (workflow_kwargs_per_agent's `main()` builds the same graph
    from its own tools: `researcher_writer_per_agent`)."""
    return _researcher_writer(workflow_kwargs_global)


def researcher_writer_per_agent() -> Workflow:
    from tests.samples.upstream import workflow_kwargs_per_agent

    return _researcher_writer(workflow_kwargs_per_agent)


def _researcher_writer(m: object) -> Workflow:
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatClient

    client = OpenAIChatClient()
    researcher = Agent(
        client=client,
        name="researcher",
        instructions=(
            "You are a data analyst. Call query_company_database exactly once "
            "with the user's request as the query. Return the raw results."
        ),
        tools=[m.query_company_database],  # type: ignore[attr-defined]
    )
    writer = Agent(
        client=client,
        name="writer",
        instructions=(
            "You are a report writer. Call get_formatting_instructions exactly once, "
            "then rewrite the data you receive into a polished report following those rules."
        ),
        tools=[m.get_formatting_instructions],  # type: ignore[attr-defined]
    )
    return SequentialBuilder(participants=[researcher, writer]).build()


def average_and_sum() -> Workflow:
    """`aggregate_results_of_different_types.main()` (a `list[int]` start)."""
    m = aggregate_results_of_different_types
    dispatcher = m.Dispatcher(id="dispatcher")
    average = m.Average(id="average")
    summation = m.Sum(id="summation")
    aggregator = m.Aggregator(id="aggregator")
    return (
        WorkflowBuilder(start_executor=dispatcher)
        .add_fan_out_edges(dispatcher, [average, summation])
        .add_fan_in_edges([average, summation], aggregator)
        .build()
    )


def word_count() -> Workflow:
    """`map_reduce_and_visualization.main()`'s workflow (its SVG export left out)."""
    m = map_reduce_and_visualization
    map_executor_0 = m.Map(id="map_executor_0")
    map_executor_1 = m.Map(id="map_executor_1")
    map_executor_2 = m.Map(id="map_executor_2")
    split_data_executor = m.Split(
        ["map_executor_0", "map_executor_1", "map_executor_2"], id="split_data_executor"
    )
    reduce_executor_0 = m.Reduce(id="reduce_executor_0")
    reduce_executor_1 = m.Reduce(id="reduce_executor_1")
    reduce_executor_2 = m.Reduce(id="reduce_executor_2")
    reduce_executor_3 = m.Reduce(id="reduce_executor_3")
    shuffle_executor = m.Shuffle(
        ["reduce_executor_0", "reduce_executor_1", "reduce_executor_2", "reduce_executor_3"],
        id="shuffle_executor",
    )
    completion_executor = m.CompletionExecutor(id="completion_executor")
    mappers = [map_executor_0, map_executor_1, map_executor_2]
    reducers = [reduce_executor_0, reduce_executor_1, reduce_executor_2, reduce_executor_3]
    return (
        WorkflowBuilder(start_executor=split_data_executor)
        .add_fan_out_edges(split_data_executor, mappers)
        .add_fan_in_edges(mappers, shuffle_executor)
        .add_fan_out_edges(shuffle_executor, reducers)
        .add_fan_in_edges(reducers, completion_executor)
        .build()
    )
