"""Pure-CPU work on a request's input: inline for a small input, in a worker thread for a large one.

Invariant: a request's input is never walked on the event loop when it holds more than
`LARGE_INPUT` items (~10 us per item for each pass: ids and stored JSON, conversion to
messages), so one large request cannot stall every other response; small ones pay no thread hop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

LARGE_INPUT = 500

P = ParamSpec("P")
T = TypeVar("T")


async def for_input(count: int, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` for an input of `count` items; `fn` must be pure CPU and thread-safe."""
    if count > LARGE_INPUT:
        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)
