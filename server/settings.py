"""All of the server's settings: one model, a section per layer, every variable declared once.

Job: `Settings.from_env()` builds every section from the environment (flags override by
field name), `variables()` lists each variable with its default and documentation, and
`markdown_table()` renders them for the README (a test keeps the README's table equal to it).

Invariant: every environment variable the server reads is a field of exactly one section.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from .envsettings import EnvSection, SettingsError, Variable, env_field
from .http.settings import HttpSettings
from .observability.settings import ObservabilitySettings
from .runtime.settings import Delivery, RuntimeSettings
from .store.settings import StoreSettings

__all__ = [
    "Delivery",
    "HttpSettings",
    "LogFormat",
    "ObservabilitySettings",
    "ProcessSettings",
    "RuntimeSettings",
    "Settings",
    "SettingsError",
    "StoreSettings",
    "markdown_table",
    "variables",
]


class LogFormat(StrEnum):
    PLAIN = "plain"
    JSON = "json"


class ProcessSettings(EnvSection):
    """What the `serve` process itself does: logging, the interpreter, how many workers."""

    SECTION: ClassVar[str] = "Process"

    log_level: str = env_field("info", "DURABLE_RESPONSES_LOG_LEVEL", "Log level (also `--log-level`).")
    framework_log_level: str = env_field(
        "warning",
        "DURABLE_RESPONSES_FRAMEWORK_LOG_LEVEL",
        "Log level of agent-framework's own loggers (`agent_framework...`). Its `info` lines are "
        'progress: three per superstep ("Starting superstep", "Completed superstep", "Created '
        'checkpoint"), which cost a countdown ~15% of its time per superstep; `info` shows them.',
    )
    log_format: LogFormat = env_field(
        LogFormat.PLAIN,
        "DURABLE_RESPONSES_LOG_FORMAT",
        "`plain` or `json` (one object per line: `time`, `level`, `logger`, `message`, `response_id`, "
        "`trace_id`, `span_id`).",
    )
    workers: int = env_field(
        1,
        "DURABLE_RESPONSES_WORKERS",
        "Server processes on this machine (also `--workers`), each a full replica sharing the port "
        "(SO_REUSEPORT) under a supervisor that forwards SIGTERM/SIGINT and exits non-zero when a "
        "worker dies. PostgreSQL only: SQLite, the embedded default, is served by one process.",
        ge=1,
    )
    switch_interval_ms: float = env_field(
        0.5,
        "DURABLE_RESPONSES_SWITCH_INTERVAL_MS",
        "The interpreter's GIL switch interval while serving (SQLite's writer thread needs the GIL "
        "after every statement; at 0.5 ms a live stream's first output goes out ~1.2 ms sooner).",
        gt=0,
    )


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    store: StoreSettings = Field(default_factory=StoreSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    process: ProcessSettings = Field(default_factory=ProcessSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Every section from the environment; raises `SettingsError` naming a bad variable."""
        return cls(
            store=StoreSettings.from_env(environ).resolved(environ),
            runtime=RuntimeSettings.from_env(environ),
            http=HttpSettings.from_env(environ),
            process=ProcessSettings.from_env(environ),
            observability=ObservabilitySettings.from_env(environ),
        )


SECTIONS: tuple[type[EnvSection], ...] = (
    RuntimeSettings,
    StoreSettings,
    HttpSettings,
    ProcessSettings,
    ObservabilitySettings,
)


def variables() -> list[Variable]:
    return [v for section in SECTIONS for v in section.variables()]


def markdown_table() -> str:
    """The README's table of environment variables."""
    rows = ["| Variable | Default | What it does |", "|---|---|---|"]
    for v in variables():
        doc = v.doc.replace("|", "\\|")
        rows.append(f"| `{v.name}` | {v.default} | {doc} |")
    return "\n".join(rows) + "\n"
