"""Logs: the plain format (default) or one JSON object per line, with the response and the
trace each line belongs to.

Job: `configure(level, json_lines)` sets up the root logger and returns uvicorn's logging
config to match; `bind_response(id)` names the response the current task works on (a run, a
recovery, a request once it knows its response).

Invariants:
- A JSON line always has `time`, `level`, `logger`, `message`, `response_id`, `trace_id` and
  `span_id` (null when unknown; trace ids only of sampled spans), and `exception` when one was
  logged.
- The server never logs a request body, an input or an output; as a second wall, every line
  (plain or JSON, tracebacks included) goes through `Redact`, which masks what looks like a
  secret: API keys (`sk-...`), bearer tokens, webhook secrets, passwords in URLs.
"""

from __future__ import annotations

import contextvars
import logging
import re
import time
from typing import Any

import orjson
from opentelemetry import trace

__all__ = ["JsonFormatter", "Redact", "bind_response", "configure", "current_response"]

_RESPONSE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "durable_responses_log_rid", default=None
)

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def bind_response(response_id: str | None) -> None:
    """Log lines of the current task (and the tasks it starts from now on) name this response."""
    _RESPONSE.set(response_id)


def current_response() -> str | None:
    return _RESPONSE.get()


_SECRETS = (
    (re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-]{12,}"), r"\1-***"),
    (re.compile(r"\bwhsec_[A-Za-z0-9+/=]{8,}"), "whsec_***"),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*"), r"\1 ***"),
    (re.compile(r"(://[^:/@\s]+):[^@\s/]+@"), r"\1:***@"),
    (re.compile(r"(?i)\b(password|passwd|secret|api[_-]?key|token)=([^\s&]+)"), r"\1=***"),
)


def redact(text: str) -> str:
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


class Redact(logging.Filter):
    """Masks secret-looking strings in a record's message and traceback (a second wall)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: log it as given
            message = str(record.msg)
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def _trace_ids() -> tuple[str | None, str | None]:
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid or not ctx.trace_flags.sampled:
        return None, None
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


class JsonFormatter(logging.Formatter):
    """One JSON object per line (see the module's invariants)."""

    def format(self, record: logging.LogRecord) -> str:
        trace_id, span_id = _trace_ids()
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "response_id": getattr(record, "response_id", None) or _RESPONSE.get(),
            "trace_id": trace_id,
            "span_id": span_id,
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        return orjson.dumps(out).decode()


FRAMEWORK_LOGGER = "agent_framework"


def configure(level: str, *, json_lines: bool, framework_level: str = "warning") -> dict[str, Any]:
    """Configure the root logger, and agent-framework's at `framework_level` (its `info` lines
    are per-superstep progress); returns the logging config uvicorn should apply (its own
    loggers in the same format, through the same filter)."""
    handler = logging.StreamHandler()
    handler.addFilter(Redact())
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(PLAIN_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger(FRAMEWORK_LOGGER).setLevel(framework_level.upper())
    formatter = {"()": f"{__name__}.JsonFormatter"} if json_lines else {"format": PLAIN_FORMAT}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"redact": {"()": f"{__name__}.Redact"}},
        "formatters": {"default": formatter},
        "handlers": {
            "default": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "filters": ["redact"],
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": ["default"], "level": level.upper(), "propagate": False},
        },
    }
