"""Example apps that need no model or network; each is a zero-argument factory for ``--app``.

Invariant: every factory returns a fresh app per call (the host builds one per run and per recovery).
``echo`` is the host's default app.
"""

from .approval import approval, approval_agent
from .countdown import countdown, countdown_agent
from .echo import echo
from .echo_agent import echo_agent

__all__ = ["approval", "approval_agent", "countdown", "countdown_agent", "echo", "echo_agent"]
