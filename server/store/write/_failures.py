"""How the outbox names and passes on a failed write (its log line, its fallback counter, the
error the writes queued behind it fail with).

Invariant: a database that cannot be used stays `DatabaseUnavailable` all the way to the
caller (who may retry), a lost lease stays `LeaseLost`; anything else becomes a `StoreError`.
"""

from __future__ import annotations

from ..errors import LeaseLost, StoreError, classify


def failure_cause(exc: BaseException) -> str:
    """What a fallback is counted under: the error's kind, not its text (one line per cause)."""
    unavailable = classify(exc)
    if unavailable is not None:
        return f"unavailable:{unavailable.reason.value}"
    orig = getattr(exc, "orig", None)
    inner = orig.__cause__ if isinstance(orig, BaseException) and orig.__cause__ is not None else orig
    return type(inner if isinstance(inner, BaseException) else exc).__name__


def describe_failure(exc: BaseException) -> str:
    unavailable = classify(exc)
    return unavailable.log_text() if unavailable is not None else str(exc).splitlines()[0][:300]


def after_failure(response_id: str, exc: BaseException) -> BaseException:
    if isinstance(exc, LeaseLost):
        return LeaseLost(response_id)
    unavailable = classify(exc)
    if unavailable is not None:
        return unavailable  # the same condition: a caller can tell a retry may succeed
    return StoreError(f"an earlier write of response {response_id} could not be committed: {exc}")
