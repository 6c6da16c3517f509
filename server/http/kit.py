"""What every route module shares: error handling, the caller's user id, JSON bodies.

Invariant: a route module gets these from `app.create_app` (one authenticator, one body
limit), so every route resolves its caller and reads its body the same way.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from ..protocol import errors

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Kit:
    guarded: Callable[[Handler], Handler]  # ProtocolError -> its JSON error, anything else -> 500
    user_of: Callable[[Request], str]  # the caller's partition (auth.py)
    read_body: Callable[[Request], Awaitable[bytes]]  # 413 beyond the limit, 415 if not JSON

    async def read_json(self, request: Request, *, empty: object = None) -> object:
        """The decoded JSON body (`empty` for an empty body); 400 if it is not JSON."""
        raw = await self.read_body(request)
        if not raw.strip():
            return empty
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise errors.bad_request(
                f"The request body is not valid JSON: {exc}", code="invalid_json"
            ) from None
