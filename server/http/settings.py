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
    keepalive_seconds: float = env_field(
        15.0, "SSE_KEEPALIVE_INTERVAL", "Seconds between SSE keep-alive comments.", gt=0
    )

    @field_validator("principal_keys", mode="before")
    @classmethod
    def _keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_principal_keys(value)
        return value
