"""The framework's graph-validation warnings, once per process (a private module's logger name)."""

from __future__ import annotations

import logging

__all__ = ["VALIDATION_LOGGER", "quiet_repeated_build_warnings"]

# The logger of the framework's graph validation (a private module's `__name__`): it warns each
# time a workflow is built, e.g. "Self-loop detected" for an intentional self-edge (the
# countdown example's). The host builds a fresh workflow for every run and every recovery.
VALIDATION_LOGGER = "agent_framework._workflows._validation"
_DISTINCT_WARNINGS = 1000


class _OncePerProcess(logging.Filter):
    """Lets each distinct warning through once; later copies of it are dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        message = record.getMessage()
        if message in self.seen:
            return False
        if len(self.seen) < _DISTINCT_WARNINGS:
            self.seen.add(message)
        return True


_ONCE = _OncePerProcess()


def quiet_repeated_build_warnings() -> None:
    """Show each of the framework's graph-validation warnings once per process, not once per
    request (the app's graph is the same at every build)."""
    logger = logging.getLogger(VALIDATION_LOGGER)
    if _ONCE not in logger.filters:
        logger.addFilter(_ONCE)
