"""Test support shipped with the package: a fake OpenAI-compatible model server, and the same
rules as an in-process chat client.

`FakeModel` (in `fake_model`) serves chat completions and the Responses API on loopback so tests
and benchmarks can run agent-framework's real OpenAI clients with no network and no model;
`RuleChatClient` (in `chat_client`) answers by the same rules inside the process (the examples
use it). Invariant: nothing here is imported by the server itself (only by its examples).
"""

from ._rules import ERRORS, ModelError, Reply, Usage
from .chat_client import RuleChatClient
from .fake_model import FakeCall, FakeModel, FakeModelState, RefusedCall, create_app

__all__ = [
    "ERRORS",
    "FakeCall",
    "FakeModel",
    "FakeModelState",
    "ModelError",
    "RefusedCall",
    "Reply",
    "RuleChatClient",
    "Usage",
    "create_app",
]
