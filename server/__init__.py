"""durable-responses: a durable OpenAI Responses host for Agent Framework agents and workflows.

The public API is re-exported here; everything else is internal.
"""

from .http.app import create_app
from .http.settings import HttpSettings
from .runtime.apps.apps import HostedApp
from .runtime.apps.context import RequestContext, request_context
from .runtime.host import Host
from .runtime.journal import journaled, not_safe_to_rerun, tool_idempotency_key
from .runtime.run.checkpoint_storage import SqlCheckpointStorage
from .runtime.settings import Delivery, RuntimeSettings
from .service import Service, StartupError, build, build_app, prepare
from .settings import Settings, SettingsError
from .store import Store
from .store.settings import StoreSettings

__version__ = "0.1.0"

__all__ = [
    "Delivery",
    "Host",
    "HostedApp",
    "HttpSettings",
    "RequestContext",
    "RuntimeSettings",
    "Service",
    "Settings",
    "SettingsError",
    "SqlCheckpointStorage",
    "StartupError",
    "Store",
    "StoreSettings",
    "__version__",
    "build",
    "build_app",
    "create_app",
    "journaled",
    "not_safe_to_rerun",
    "prepare",
    "request_context",
    "tool_idempotency_key",
]
