"""durable-responses: a durable OpenAI Responses host for Agent Framework agents and workflows.

The public API is re-exported here; everything else is internal.
"""

from .config import Settings
from .http.app import HttpSettings, create_app
from .runtime.apps import HostedApp
from .runtime.checkpoint_storage import SqlCheckpointStorage
from .runtime.context import RequestContext, request_context
from .runtime.host import Host, HostSettings
from .store import Store

__version__ = "0.1.0"

__all__ = [
    "Host",
    "HostSettings",
    "HostedApp",
    "HttpSettings",
    "RequestContext",
    "Settings",
    "SqlCheckpointStorage",
    "Store",
    "__version__",
    "create_app",
    "request_context",
]
