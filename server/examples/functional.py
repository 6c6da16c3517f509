"""A functional workflow (`@workflow` / `@step`): an order priced, checked, approved and booked.

The input is an `Order` dataclass, from a JSON object in the request's text
(`{"item": "tea", "quantity": 3}`). Each `@step` runs once: its result is saved in a checkpoint
as it finishes, so a crash resumes after the last finished step (its earlier steps are answered
from the checkpoint, not run again). An order above 100 waits for a person: the client sees a
`function_call` named `request_info` (`data`: the order and its total) and answers it with a
`function_call_output` holding `true` or `false`. The output is the `Receipt`, shown as JSON.

agent-framework 1.23 hands over a functional workflow's events only once the function returns
or pauses, so the receipt (or the request) arrives at the end of the run. Deterministic and
model-free; `FUNCTIONAL_STEP_DELAY_SECONDS` slows each step (for crash demos), and
`FUNCTIONAL_STEP_LOG` names a file that gets one line per step run.

    durable-responses serve --app durable_responses.examples.functional:order_pipeline
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from agent_framework import RunContext, step, workflow

PRICES = {"tea": 12.5, "coffee": 20.0, "cake": 35.0}
APPROVAL_ABOVE = 100.0


@dataclass
class Order:
    item: str
    quantity: int = 1


@dataclass
class Quote:
    item: str
    quantity: int
    total: float


@dataclass
class Receipt:
    item: str
    quantity: int
    total: float
    approved: bool
    booking: str


async def _pause(name: str) -> None:
    delay = float(os.environ.get("FUNCTIONAL_STEP_DELAY_SECONDS", "0") or 0)
    if delay > 0:
        await asyncio.sleep(delay)
    log = os.environ.get("FUNCTIONAL_STEP_LOG")
    if log:
        _append(log, name)


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


@step
async def price(order: Order) -> Quote:
    await _pause("price")
    unit = PRICES.get(order.item, 10.0)
    return Quote(order.item, order.quantity, round(unit * order.quantity, 2))


@step
async def check_stock(quote: Quote) -> bool:
    await _pause("check_stock")
    return quote.quantity <= 50


@step
async def book(quote: Quote, approved: bool) -> str:
    await _pause("book")
    return f"{'BOOKED' if approved else 'DECLINED'}-{quote.item}-{quote.quantity}"


@workflow(name="order_pipeline")
async def order_pipeline(order: Order, ctx: RunContext) -> Receipt:
    quote = await price(order)
    in_stock = await check_stock(quote)
    approved = in_stock
    if in_stock and quote.total > APPROVAL_ABOVE:
        approved = await ctx.request_info({"order": order.item, "total": quote.total}, response_type=bool)
    booking = await book(quote, approved)
    return Receipt(quote.item, quote.quantity, quote.total, approved, booking)
