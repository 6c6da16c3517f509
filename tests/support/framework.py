"""The installed agent-framework-core release, for the few tests that describe the framework's own
behaviour where the supported releases differ (README: supported agent-framework releases)."""

from __future__ import annotations

from importlib import metadata

AF_CORE = metadata.version("agent-framework-core")
AF_CORE_RELEASE = tuple(int(part) for part in AF_CORE.split(".")[:3])

# The releases CI runs the suite on (the oldest and the newest supported).
OLDEST, NEWEST = "1.23.0", "1.26.0"

# 1.26.0's `WorkflowAgent` drops what an agent inside the workflow streams that holds a function
# call or an approval response, and every message that is not the assistant's (tool results);
# 1.23.0 forwards all of it. The host forwards all of it on both (`_af_private.forwarding`).
WORKFLOW_AGENT_HIDES_TOOL_CALLS = AF_CORE_RELEASE >= (1, 26)

# 1.26.0's `Agent` ends its stream with an update that holds no content (its evaluation metadata).
AGENT_STREAM_ENDS_WITH_METADATA = AF_CORE_RELEASE >= (1, 26)
