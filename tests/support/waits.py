"""Waiting on a condition instead of sleeping a fixed time.

Invariant: a wait returns as soon as its condition holds, and fails (naming what it waited
for and the last value it saw) once its timeout has passed. Nothing raised by the condition
is swallowed: a check that errors (an HTTP 500, a refused connection) fails the test at once
instead of looking like "not yet".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 30,
    *,
    interval: float = 0.02,
    message: str | Callable[[], str] = "",
) -> T:
    """Call `predicate` until it returns something truthy; return that value.

    Raises AssertionError after `timeout` seconds (with `message`, evaluated then if callable).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            what = message() if callable(message) else message
            raise AssertionError(
                f"not true after {timeout:g} s: {what or getattr(predicate, '__name__', predicate)!s} "
                f"(last value {value!r})"
            )
        time.sleep(interval)


def wait_for_value(
    read: Callable[[], Any],
    accept: Callable[[Any], bool],
    timeout: float = 30,
    *,
    interval: float = 0.05,
    message: str | Callable[[], str] = "",
) -> Any:
    """Call `read` until `accept(value)`; return the accepted value (falsy values are fine)."""
    seen: list[Any] = []

    def check() -> bool:
        value = read()
        seen[:] = [value]
        return accept(value)

    def describe() -> str:
        what = message() if callable(message) else message
        return f"{what} (last: {seen[0] if seen else None!r})"

    wait_until(check, timeout, interval=interval, message=describe)
    return seen[0]
