"""Test support shipped with the package: a fake OpenAI-compatible model server.

`FakeModel` (in `fake_model`) serves chat completions and the Responses API on loopback so tests
and benchmarks can run agent-framework's real OpenAI clients with no network and no model.
Invariant: nothing here is imported by the server itself.
"""

from ._rules import ERRORS, ModelError, Reply, Usage
from .fake_model import FakeCall, FakeModel, FakeModelState, RefusedCall, create_app

__all__ = [
    "ERRORS",
    "FakeCall",
    "FakeModel",
    "FakeModelState",
    "ModelError",
    "RefusedCall",
    "Reply",
    "Usage",
    "create_app",
]
