"""The runtime's settings: which app, how events are delivered, recovery and limits.

Invariant: every knob of a run, recovery and shutdown is read here, once, when the server is
assembled; no runtime module reads the environment itself.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import field_validator, model_validator

from ..envsettings import EnvSection, env_field
from ..protocol.webhooks import parse_secret

DEFAULT_APP = "durable_responses.examples.echo:echo"


class Delivery(StrEnum):
    """How a run's events reach clients (README, "Guarantees": live and durable delivery)."""

    LIVE = "live"  # group-committed within milliseconds, relayed at once
    DURABLE = "durable"  # visible only once the superstep's checkpoint commits

    def of_response(self, *, stream: bool, background: bool) -> Delivery:
        """The delivery of one response under this setting: a foreground request that does not
        stream waits for its whole response, which nobody reads live, so it is delivered
        durable (fewer commits to wait for: no first output committed alone, no commit lag)."""
        return self if stream or background else Delivery.DURABLE


class DoubleTexting(StrEnum):
    """What a new turn does while the turn it follows still runs (see `turns`)."""

    ENQUEUE = "enqueue"
    REJECT = "reject"
    INTERRUPT = "interrupt"
    ROLLBACK = "rollback"


class ServerTools(StrEnum):
    """How a tool the server ran is shown (README, "Tools")."""

    MCP_CALL = "mcp_call"
    FUNCTION_CALL = "function_call"


class RuntimeSettings(EnvSection):
    SECTION: ClassVar[str] = "Runtime"

    app: str = env_field(
        DEFAULT_APP,
        "DURABLE_RESPONSES_APP",
        "`MODULE:ATTR` of a zero-argument factory returning a Workflow (its start executor may take "
        "messages or a typed input), WorkflowBuilder, WorkflowAgent, a functional `@workflow` or any agent "
        "with `run()` (the host builds a fresh one per run). Several apps: comma-separated "
        "`NAME=MODULE:ATTR` entries; a request's `model` picks one.",
    )
    app_version: str | None = env_field(
        None,
        "DURABLE_RESPONSES_APP_VERSION",
        "The version of the app this replica runs, recorded with every response it creates; only a "
        "replica of a compatible version resumes, takes over or continues a response. Unset: a "
        "fingerprint of its workflow's executors, edges and declared types (an agent's name and tools).",
        shown_default="a fingerprint of the app",
        max_length=64,
    )
    compatible_versions: tuple[str, ...] = env_field(
        (),
        "DURABLE_RESPONSES_COMPATIBLE_VERSIONS",
        "Older app versions (comma-separated) whose responses this replica may resume and continue too, "
        "e.g. after a change that keeps the workflow's graph.",
    )
    delivery: Delivery = env_field(
        Delivery.LIVE,
        "DURABLE_RESPONSES_DELIVERY",
        "`live` (stream tokens at once; an item is closed `completed` only with the checkpoint after "
        "it) or `durable` (a superstep's events are visible only once its checkpoint commits). A "
        "request that neither streams nor runs in the background is delivered `durable` either way.",
    )
    server_tools: ServerTools = env_field(
        ServerTools.MCP_CALL,
        "DURABLE_RESPONSES_SERVER_TOOLS",
        "How a tool the server ran is shown: `mcp_call` (one `mcp_call` item with its output, what "
        "OpenAI's API shows for a tool it ran; no client takes it for a call to answer) or "
        "`function_call` (a `function_call` item and a `function_call_output` item, as the Foundry "
        "host shows it).",
    )
    checkpoint_types: tuple[str, ...] = env_field(
        (),
        "DURABLE_RESPONSES_CHECKPOINT_TYPES",
        "Extra types allowed in workflow checkpoints, comma-separated `module:qualname` entries "
        "(also `--allow-checkpoint-type`).",
    )
    recovery_interval: float = env_field(
        2.0,
        "DURABLE_RESPONSES_RECOVERY_INTERVAL",
        "Longest wait between two sweeps for responses whose owner's lease expired (a sweep also "
        "runs when the next lease expires, and once writes work again after a database error).",
        gt=0,
    )
    max_recoveries: int = env_field(
        10,
        "DURABLE_RESPONSES_MAX_RECOVERIES",
        "A response taken over more often than this without finishing ends `failed`.",
        ge=0,
    )
    shutdown_grace_seconds: float = env_field(
        10.0,
        "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS",
        "On SIGTERM, how long foreground runs may finish before they end `failed`.",
        ge=0,
    )
    max_inflight: int = env_field(
        1000,
        "DURABLE_RESPONSES_MAX_INFLIGHT",
        "Responses one process runs at once; more are refused with 429.",
        gt=0,
    )
    double_texting: DoubleTexting = env_field(
        DoubleTexting.ENQUEUE,
        "DURABLE_RESPONSES_DOUBLE_TEXTING",
        "What a new turn does while the turn it follows (its `previous_response_id`, or its "
        "conversation's) still runs: `enqueue` (wait for it, then run), `reject` (409), `interrupt` "
        "(cancel it, then run) or `rollback` (cancel and delete it, then run). A request chooses its "
        "own with the `x-double-texting` header or the `double_texting` metadata key.",
    )
    double_texting_wait_seconds: float = env_field(
        600.0,
        "DURABLE_RESPONSES_DOUBLE_TEXTING_WAIT_SECONDS",
        "How long a new turn waits for the turn it follows to end (enqueue) or to stop (interrupt, "
        "rollback) before it is refused with 409 `conversation_busy`.",
        gt=0,
    )
    cancel_wait_seconds: float = env_field(
        10.0,
        "DURABLE_RESPONSES_CANCEL_WAIT_SECONDS",
        "How long `POST /responses/{id}/cancel` waits for the run to record its end.",
        ge=0,
    )
    remote_poll_seconds: float = env_field(
        0.5,
        "DURABLE_RESPONSES_REMOTE_POLL_SECONDS",
        "How often a wait on a response driven by another process checks it when no wake-up "
        "can arrive (SQLite).",
        gt=0,
    )
    yield_every_ms: float = env_field(
        4.0,
        "DURABLE_RESPONSES_YIELD_EVERY_MS",
        "A run that has kept the event loop this long gives it a turn, so a live stream's "
        "commits and relays go on during a burst (2, 4 and 8 ms within noise of each other "
        "for a 1000-output burst).",
        gt=0,
    )
    commit_lag_ms: float = env_field(
        16.0,
        "DURABLE_RESPONSES_COMMIT_LAG_MS",
        "A live run whose oldest write is still not committed after this long waits for its "
        "commit, its executors held: how far a live stream may trail its workflow (shorter "
        "makes a run wait on SQLite's commits more often: at 4 ms a countdown spends ~45% of "
        "its time waiting).",
        gt=0,
    )

    journal: bool = env_field(
        True,
        "DURABLE_RESPONSES_JOURNAL",
        "Record each model and tool call of a stored response in the outbox, so a re-run after a "
        "crash replays finished calls instead of making them again (`off`: re-run them).",
    )

    webhook_urls: tuple[str, ...] = env_field(
        (),
        "DURABLE_RESPONSES_WEBHOOK_URL",
        "Endpoints (comma-separated) that get a signed webhook event (`response.completed`, "
        "`.failed`, `.cancelled`, `.incomplete`) when a background response ends.",
    )
    webhook_secret: str | None = env_field(
        None,
        "DURABLE_RESPONSES_WEBHOOK_SECRET",
        "The Standard Webhooks signing secret, `whsec_<base64 key>` (required with "
        "DURABLE_RESPONSES_WEBHOOK_URL); verify with the openai SDK's `webhooks.unwrap`.",
    )
    webhook_timeout_seconds: float = env_field(
        10.0,
        "DURABLE_RESPONSES_WEBHOOK_TIMEOUT_SECONDS",
        "How long a webhook endpoint may take to answer one attempt (then it is retried).",
        gt=0,
    )
    webhook_max_attempts: int = env_field(
        12,
        "DURABLE_RESPONSES_WEBHOOK_MAX_ATTEMPTS",
        "Attempts per event and endpoint before its delivery ends `failed` (logged).",
        ge=1,
    )
    webhook_retry_seconds: float = env_field(
        5.0,
        "DURABLE_RESPONSES_WEBHOOK_RETRY_SECONDS",
        "Delay before the first retry; each further retry waits twice as long (jittered).",
        gt=0,
    )
    webhook_max_retry_seconds: float = env_field(
        3600.0,
        "DURABLE_RESPONSES_WEBHOOK_MAX_RETRY_SECONDS",
        "The longest wait between two attempts.",
        gt=0,
    )
    webhook_poll_seconds: float = env_field(
        2.0,
        "DURABLE_RESPONSES_WEBHOOK_POLL_SECONDS",
        "How often a replica looks for due webhook deliveries (its own are sent at once).",
        gt=0,
    )

    @field_validator("webhook_urls", mode="before")
    @classmethod
    def _urls(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = tuple(u.strip() for u in value.split(",") if u.strip())
        for url in value:
            if not str(url).startswith(("http://", "https://")):
                raise ValueError(f"a webhook URL must start with http:// or https:// (got {str(url)[:80]!r})")
        return value

    @field_validator("webhook_secret")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        if value is not None:
            parse_secret(value)
        return value

    @model_validator(mode="after")
    def _secret_with_urls(self) -> RuntimeSettings:
        if self.webhook_urls and not self.webhook_secret:
            raise ValueError(
                "DURABLE_RESPONSES_WEBHOOK_URL is set but DURABLE_RESPONSES_WEBHOOK_SECRET is not: "
                "webhooks are always signed (whsec_ followed by a base64 key)"
            )
        return self

    @field_validator("checkpoint_types", "compatible_versions", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(t.strip() for t in value.split(",") if t.strip())
        return value

    @property
    def yield_every(self) -> float:
        return self.yield_every_ms / 1000

    @property
    def commit_lag(self) -> float:
        return self.commit_lag_ms / 1000
