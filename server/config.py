"""Server settings: command-line flags over environment variables over defaults.

Invariant: one place decides where data lives. The embedded SQLite file is
`<data dir>/durable-responses.db`; the data dir is `$HOME/.durable-responses` on a Foundry
hosted agent (only `$HOME` survives compute recreation there), else
`DURABLE_RESPONSES_DATA_DIR`, else `./data`. `DATABASE_URL` overrides all of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_PORT = 8088
DB_FILE = "durable-responses.db"


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a number, got {raw!r}") from None


def data_dir() -> str:
    # On a Foundry hosted agent only $HOME survives compute recreation: it wins even over an
    # image's DURABLE_RESPONSES_DATA_DIR (seed 002 lost paused workflows to a local path).
    if os.environ.get("FOUNDRY_HOSTING_ENVIRONMENT"):
        return os.path.join(os.path.expanduser("~"), ".durable-responses")
    explicit = os.environ.get("DURABLE_RESPONSES_DATA_DIR")
    if explicit:
        return explicit
    return os.path.join(os.getcwd(), "data")


def default_database_url() -> str:
    return "sqlite:///" + os.path.join(os.path.abspath(data_dir()), DB_FILE)


@dataclass
class Settings:
    app: str | None = None
    database_url: str = ""
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    delivery: str = "live"
    api_key: str | None = None
    principal_keys: dict[str, str] = field(default_factory=dict)
    max_inflight: int = 1000
    commit_window_ms: float = 2.0
    lease_seconds: float = 15.0
    recovery_interval: float = 2.0
    shutdown_grace_seconds: float = 10.0
    keepalive_seconds: float = 15.0
    max_body_bytes: int = 16 * 1024 * 1024
    allowed_checkpoint_types: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_env(cls) -> Settings:
        types = os.environ.get("DURABLE_RESPONSES_CHECKPOINT_TYPES", "")
        port_raw = os.environ.get("PORT") or str(DEFAULT_PORT)
        try:
            port = int(port_raw)
        except ValueError:
            raise SystemExit(f"PORT must be an integer, got {port_raw!r}") from None
        return cls(
            app=os.environ.get("DURABLE_RESPONSES_APP") or None,
            database_url=os.environ.get("DATABASE_URL") or default_database_url(),
            host=os.environ.get("HOST") or "127.0.0.1",
            port=port,
            delivery=os.environ.get("DURABLE_RESPONSES_DELIVERY") or "live",
            api_key=os.environ.get("DURABLE_RESPONSES_API_KEY") or None,
            principal_keys=_principal_keys(),
            max_inflight=int(_env_float("DURABLE_RESPONSES_MAX_INFLIGHT", 1000)),
            commit_window_ms=_env_float("DURABLE_RESPONSES_COMMIT_WINDOW_MS", 2.0),
            lease_seconds=_env_float("DURABLE_RESPONSES_LEASE_SECONDS", 15.0),
            recovery_interval=_env_float("DURABLE_RESPONSES_RECOVERY_INTERVAL", 2.0),
            shutdown_grace_seconds=_env_float("DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS", 10.0),
            keepalive_seconds=_env_float("SSE_KEEPALIVE_INTERVAL", 15.0),
            max_body_bytes=int(_env_float("DURABLE_RESPONSES_MAX_BODY_BYTES", 16 * 1024 * 1024)),
            allowed_checkpoint_types=tuple(t.strip() for t in types.split(",") if t.strip()),
        )


def _principal_keys() -> dict[str, str]:
    from .http.auth import parse_principal_keys

    try:
        return parse_principal_keys(os.environ.get("DURABLE_RESPONSES_API_KEYS", ""))
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
