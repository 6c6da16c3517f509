"""The token provider (passwordless PostgreSQL): what a source may produce, caching until shortly
before expiry, refetching after a refusal. No database here (tests/postgres rotates a real
role's password)."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
import types
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest

from durable_responses.store.db._pg_auth import Token, TokenError, TokenProvider, _parse
from durable_responses.store.settings import StoreSettings


def _jwt(exp: float) -> str:
    def part(d: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'exp': int(exp), 'aud': 'db'})}.sig"


def test_what_a_source_may_produce() -> None:
    now = time.time()
    AccessToken = namedtuple("AccessToken", ["token", "expires_on"])  # azure-identity's shape
    assert _parse("  secret\n") == ("secret", None)
    token = _jwt(now + 3600)
    assert _parse(token) == (token, float(int(now + 3600)))
    assert _parse(json.dumps({"accessToken": "t1", "expires_on": 1700000000})) == ("t1", 1700000000.0)
    assert _parse({"token": "t2", "expires_at": "1700000001"}) == ("t2", 1700000001.0)
    assert _parse(AccessToken("t3", 1700000002)) == ("t3", 1700000002.0)
    assert _parse(("t4", 1700000003.5)) == ("t4", 1700000003.5)
    obj = types.SimpleNamespace(token="t5", expires_on=None)
    assert _parse(obj) == ("t5", None)
    with pytest.raises(TokenError):
        _parse(42)
    with pytest.raises(TokenError):
        _parse({"expires_on": 1})


async def test_cached_until_shortly_before_expiry_and_refetched_after_a_refusal() -> None:
    calls: list[float] = []
    lifetime = [600.0]

    async def source() -> tuple[str, float]:
        calls.append(time.time())
        return f"tok{len(calls)}", time.time() + lifetime[0]

    provider = TokenProvider(source, describe="test", ttl=300)
    assert await provider.password() == "tok1"
    assert await provider.password() == "tok1"  # cached
    provider.invalidate()  # the server refused it
    assert await provider.password() == "tok2"
    lifetime[0] = 50  # a short-lived token: replaced once a fifth of its life remains
    provider.invalidate()
    assert await provider.password() == "tok3"
    assert await provider.password() == "tok3"
    provider._token = Token("tok3", time.time() + 5, time.time() - 45)  # 45 s later: 5 s of 50 left
    assert await provider.password() == "tok4"
    assert provider.fetches == 4


async def test_a_token_without_an_expiry_lives_its_ttl() -> None:
    n = [0]

    def source() -> str:
        n[0] += 1
        return f"plain{n[0]}"

    async def call() -> Any:
        return source()

    provider = TokenProvider(call, describe="test", ttl=0.3)
    assert await provider.password() == "plain1"
    assert await provider.password() == "plain1"
    time.sleep(0.35)
    assert await provider.password() == "plain2"


async def test_command_and_callable_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "token.sh"
    script.write_text('echo \'{"accessToken": "from-cmd", "expiresOn": "2999-01-01 00:00:00.000000"}\'\n')
    settings = StoreSettings(pg_token_command=f"sh {script}")
    provider = settings.connection_options().token
    assert provider is not None and "TOKEN_COMMAND" in provider.describe
    assert await provider.password() == "from-cmd"
    assert provider.current is not None and provider.current.expires_at > time.time() + 1e8

    failing = TokenProvider.from_settings(command="echo nope >&2; exit 3", provider="", ttl=60)
    assert failing is not None
    with pytest.raises(TokenError, match="exited with 3: nope"):
        await failing.password()

    module = types.ModuleType("dr_test_tokens")

    async def async_token() -> tuple[str, float]:
        return "from-callable", time.time() + 3600

    module.async_token = async_token  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dr_test_tokens", module)
    by_callable = StoreSettings(
        pg_token_provider="dr_test_tokens:async_token", pg_token_command="false"
    ).connection_options()
    assert by_callable.token is not None and "PROVIDER" in by_callable.token.describe  # wins over the command
    assert await by_callable.token.password() == "from-callable"
    with pytest.raises(TokenError, match="cannot load"):
        TokenProvider.from_settings(command="", provider="dr_test_tokens:missing", ttl=60)
    assert StoreSettings().connection_options().token is None


async def test_connections_opened_together_share_one_fetch() -> None:
    calls = [0]

    async def slow() -> str:
        calls[0] += 1
        await asyncio.sleep(0.05)
        return "shared"

    provider = TokenProvider(slow, describe="test", ttl=60)
    assert await asyncio.gather(*(provider.password() for _ in range(10))) == ["shared"] * 10
    assert calls[0] == 1
