"""Passwordless PostgreSQL: a token provider whose token is the password of every new connection.

Job: `TokenProvider.password()` returns a token from a command (`DURABLE_RESPONSES_PG_TOKEN_COMMAND`:
its standard output) or a `module:callable` (`DURABLE_RESPONSES_PG_TOKEN_PROVIDER`), fetched again
only shortly before it expires, which is how Entra ID and IAM database tokens work: a token is
good for minutes to an hour, and PostgreSQL checks it only when a connection opens.

Invariant: a token is used until `REFRESH_MARGIN` before its expiry, never after; when the
server refuses one (`invalidate()`), the next connection fetches a new one. Its expiry is, in
order: what the source says (`expires_on`/`expires_at`, a JWT's `exp` claim), else the
configured time to live.

What a source may produce: a command prints the token (or JSON with `accessToken`/`token` and
`expires_on`/`expires_at`/`expiresOn`, as `az account get-access-token` does); a callable
(sync or async, no arguments) returns a `str`, a `(token, expires_at)` pair, or an object with
`token` and `expires_on` (azure-identity's `AccessToken`).
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import DatabaseSetupError

log = logging.getLogger("durable_responses.pg_auth")

REFRESH_MARGIN = 60.0  # seconds before expiry a token is replaced (at most a fifth of its life)
COMMAND_TIMEOUT = 30.0


class TokenError(DatabaseSetupError):
    """The token source failed (the command exited non-zero, the callable raised, no token)."""


@dataclass(frozen=True)
class Token:
    value: str
    expires_at: float  # epoch seconds
    fetched_at: float


def _jwt_expiry(token: str) -> float | None:
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        exp = payload.get("exp") if isinstance(payload, dict) else None
    except (ValueError, TypeError):
        return None
    return float(exp) if isinstance(exp, int | float) else None


def _expiry(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed.timestamp()  # a naive time is local time, as `az` prints it
    return None


def _parse(raw: Any) -> tuple[str, float | None]:
    """(token, expiry or None) from whatever a source produced."""
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except ValueError:
                return text, _jwt_expiry(text)
            return _parse(data)
        return text, _jwt_expiry(text)
    if isinstance(raw, dict):
        token = raw.get("accessToken") or raw.get("token") or raw.get("password")
        if not isinstance(token, str):
            raise TokenError("the token source's JSON has no accessToken/token field")
        for key in ("expires_on", "expires_at", "expiresOn", "expiration"):
            if key in raw and (exp := _expiry(raw[key])) is not None:
                return token.strip(), exp
        return token.strip(), _jwt_expiry(token)
    token_attr = getattr(raw, "token", None)
    if isinstance(token_attr, str):
        exp_attr = getattr(raw, "expires_on", None) or getattr(raw, "expires_at", None)
        return token_attr.strip(), _expiry(exp_attr) if exp_attr is not None else _jwt_expiry(token_attr)
    if isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[0], str):
        return raw[0].strip(), _expiry(raw[1])
    raise TokenError(f"the token source returned {type(raw).__name__}, not a token")


Source = Callable[[], Awaitable[Any]]


def command_source(command: str) -> Source:
    async def run() -> str:
        proc = await asyncio.create_subprocess_shell(
            command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), COMMAND_TIMEOUT)
        except TimeoutError:
            proc.kill()
            raise TokenError(f"the token command did not finish in {COMMAND_TIMEOUT:g} s") from None
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-3:]
            raise TokenError(f"the token command exited with {proc.returncode}: {' '.join(tail)}")
        return out.decode(errors="replace")

    return run


def callable_source(spec: str) -> Source:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise TokenError(f"{spec!r} is not MODULE:CALLABLE")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise TokenError(f"cannot load the token provider {spec!r}: {exc}") from exc
    if not callable(target):
        raise TokenError(f"the token provider {spec!r} is not callable")

    async def run() -> Any:
        result = target()
        if inspect.isawaitable(result):
            result = await result
        return result

    return run


class TokenProvider:
    """A cached token from one source; `password()` is asyncpg's password for each connection."""

    def __init__(self, source: Source, *, describe: str, ttl: float) -> None:
        self._source = source
        self.describe = describe  # names the source in error messages
        self._ttl = ttl
        self._token: Token | None = None
        self._fetching: asyncio.Task[str] | None = None
        self.fetches = 0

    @classmethod
    def from_settings(cls, *, command: str, provider: str, ttl: float) -> TokenProvider | None:
        if provider:
            return cls(
                callable_source(provider),
                describe=f"DURABLE_RESPONSES_PG_TOKEN_PROVIDER ({provider})",
                ttl=ttl,
            )
        if command:
            return cls(command_source(command), describe="DURABLE_RESPONSES_PG_TOKEN_COMMAND", ttl=ttl)
        return None

    @property
    def current(self) -> Token | None:
        return self._token

    def _fresh(self, now: float) -> bool:
        tok = self._token
        if tok is None:
            return False
        margin = min(REFRESH_MARGIN, (tok.expires_at - tok.fetched_at) / 5)
        return now < tok.expires_at - margin

    async def password(self) -> str:
        if self._fresh(time.time()) and self._token is not None:
            return self._token.value
        # One fetch at a time: the connections a pool opens together share it.
        loop = asyncio.get_running_loop()
        task = self._fetching
        if task is None or task.done() or task.get_loop() is not loop:
            task = self._fetching = loop.create_task(self._fetch())
        return await asyncio.shield(task)

    async def _fetch(self) -> str:
        try:
            raw = await self._source()
        except TokenError:
            raise
        except Exception as exc:
            raise TokenError(f"{type(exc).__name__}: {exc}") from exc
        value, expires = _parse(raw)
        if not value:
            raise TokenError("the token source produced an empty token")
        now = time.time()
        if expires is None:
            expires = now + self._ttl
        elif expires <= now:
            log.warning("%s returned a token that expired %.0f s ago", self.describe, now - expires)
        self._token = Token(value, expires, now)
        self.fetches += 1
        return value

    def invalidate(self) -> None:
        """The server refused the token: fetch a new one for the next connection."""
        self._token = None
