"""The statistics every scenario shares: medians that skip what did not happen, nearest-rank
percentiles, balanced orders for interleaved runs, and the pairs of the per-superstep figure.

Why each exists:
- `balanced_orders`: what a host still does after its stream ended weighs on whichever host comes
  next (the plain existing host's 1000-output stream leaves about a millisecond of after-work on the
  next request), and a plain rotation always put the same hosts after the same hosts. In a Williams
  Latin square every host comes right after every other host equally often.
- `Pairs`: the fixed cost of a response is removed by pairing each N+1-superstep run with the
  1-superstep run just before it, so slow drift on the machine weighs on both runs of a pair alike;
  the median of the pairs is robust to a pair that a pause did hit.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any


def median(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def nearest_rank(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def williams_square(n: int) -> list[list[int]]:
    """Williams' balanced Latin square of n members: n rows, and their mirror images when n is odd."""
    first = [0]
    lo, hi = 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    square = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        square += [row[::-1] for row in square]
    return square


def balanced_orders(n: int, rounds: int) -> list[list[int]]:
    """`rounds` orders of n hosts, cycling through `williams_square(n)`: every host comes right
    after every other host equally often when `rounds` is a multiple of the square's length
    (`balanced_rounds`)."""
    square = williams_square(n)
    return [square[r % len(square)] for r in range(rounds)]


def balanced_rounds(n: int, at_least: int) -> int:
    """The fewest rounds, at least `at_least`, that run the square of n members whole: a partial
    square puts some hosts after others more often. With 5 members (the plain existing host and
    ours four) and 20 rounds, the square of 10 rows runs twice: the same 20 as ever."""
    size = len(williams_square(n)) if n > 1 else 1
    return -(-at_least // size) * size


@dataclass
class Pairs:
    """Runs of one N: each N+1 run's time minus the N=1 run's just before it, divided by N."""

    n: int
    pairs: list[float] = field(default_factory=list)
    base: list[float] = field(default_factory=list)
    errors: int = 0
    partial: str | None = None

    def result(self) -> dict[str, Any]:
        return {
            "ms": median(self.pairs) if self.pairs else math.nan,
            "base_ms": median(self.base),
            "partial": self.partial,
            "errors": self.errors,
        }
