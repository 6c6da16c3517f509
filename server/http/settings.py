"""The HTTP layer's settings: where to listen, who may call, how big a request may be.

Invariant: authentication is decided here once (a shared key, per-principal keys, or none);
the routes never read the environment.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import field_validator

from ..envsettings import EnvSection, env_field
from .auth import parse_principal_keys

DEFAULT_PORT = 8088


class HttpSettings(EnvSection):
    SECTION: ClassVar[str] = "HTTP"

    host: str = env_field("127.0.0.1", "HOST", "Interface to bind (the container sets 0.0.0.0).")
    port: int = env_field(DEFAULT_PORT, "PORT", "Port to listen on.", gt=0, lt=65536)
    reuse_port: bool = env_field(
        False,
        "DURABLE_RESPONSES_REUSE_PORT",
        "Bind with SO_REUSEPORT (also `--reuse-port`), so several processes share the port; every "
        "worker of `--workers` does, and so can processes started side by side by your own supervisor.",
    )
    api_key: str | None = env_field(
        None, "DURABLE_RESPONSES_API_KEY", "Require `Authorization: Bearer <key>` with this key."
    )
    principal_keys: dict[str, str] = env_field(
        {},
        "DURABLE_RESPONSES_API_KEYS",
        "Per-principal keys, `alice:key1,bob:key2`: each key's principal is its own partition "
        "(`x-agent-user-id` then subdivides it).",
    )
    max_body_bytes: int = env_field(
        16 * 1024 * 1024,
        "DURABLE_RESPONSES_MAX_BODY_BYTES",
        "Largest request body accepted (413 beyond).",
        gt=0,
        shown_default="16 MiB",
    )
    admin_key: str | None = env_field(
        None,
        "DURABLE_RESPONSES_ADMIN_KEY",
        "`Authorization: Bearer <key>` with this key sees every tenant in the operator view (`/ui/`, "
        "`/v1/admin/...`); other callers see their own partition there.",
    )
    keepalive_seconds: float = env_field(
        15.0, "SSE_KEEPALIVE_INTERVAL", "Seconds between SSE keep-alive comment lines (see HTTP API).", gt=0
    )

    cors_origins: tuple[str, ...] = env_field(
        (),
        "DURABLE_RESPONSES_CORS_ORIGINS",
        "Browser origins allowed to call the server (comma-separated, or `*`); unset: CORS is off.",
    )
    agent_session_id: str | None = env_field(
        None,
        "FOUNDRY_AGENT_SESSION_ID",
        "Set by Foundry: the session id of responses whose request names none (`agent_session_id`, "
        "`x-agent-session-id`); returned as `x-agent-session-id` and the response's `agent_session_id`.",
    )
    agent_name: str | None = env_field(
        None,
        "FOUNDRY_AGENT_NAME",
        "Set by Foundry: the hosted agent's name, the model id `/v1/models` lists.",
    )
    agent_version: str | None = env_field(
        None, "FOUNDRY_AGENT_VERSION", "Set by Foundry: the agent's version (the model id is `name:version`)."
    )

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _origins(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(o.strip() for o in value.split(",") if o.strip())
        return value

    @field_validator("principal_keys", mode="before")
    @classmethod
    def _keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_principal_keys(value)
        return value
