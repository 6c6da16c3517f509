"""A creation answered in one call (`Host.respond`): what a POST /v1/responses sends back, by
how its client waits for it.

Job: the creator's stream (`stream`), the stored body (`background`), or the final Response
(JSON) once the run ends; for a JSON request whose client goes away first (`disconnected`
returns), the run is abandoned (a foreground run stops) and the reply is None.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from ..faults import client_error
from ..turns.creation import Created
from .relay import ResponseStream

if TYPE_CHECKING:
    from ..host import Host

# The creator's stream, a Response's JSON, or None: the client left before the end.
Reply: TypeAlias = ResponseStream | dict[str, Any] | None


async def reply(
    host: Host, user_id: str, created: Created, disconnected: Callable[[], Awaitable[object]]
) -> Reply:
    """The answer to `created` (see the module)."""
    if created.request.stream:
        return host.stream_created(created)
    if created.request.background:
        try:
            return await host.get(user_id, created.response_id)
        except Exception as exc:
            if client_error(exc) is None:
                raise
            # The response is saved: its read failed on a connection the database ended
            # (the pool replaced it). Read it back once rather than answer an error that a
            # client without a key would retry into a second response.
            await asyncio.sleep(0.05)
            return await host.get(user_id, created.response_id)
    waiter = asyncio.ensure_future(host.wait(created))
    disconnect = asyncio.ensure_future(disconnected())
    done, _ = await asyncio.wait({waiter, disconnect}, return_when=asyncio.FIRST_COMPLETED)
    if waiter not in done:
        host.abandon(created.response_id)
        waiter.cancel()
        return None
    disconnect.cancel()
    return waiter.result()
