"""API keys and per-principal partitions (pure: the Authenticator alone)."""

from __future__ import annotations

import pytest

from durable_responses.http.auth import Authenticator, parse_principal_keys
from durable_responses.protocol.errors import ProtocolError


def test_no_keys_the_header_is_the_partition() -> None:
    auth = Authenticator()
    assert auth.user_of({}) == ""
    assert auth.user_of({"x-agent-user-id": "alice"}) == "alice"


def test_shared_key_required_and_checked() -> None:
    auth = Authenticator("secret")
    with pytest.raises(ProtocolError) as e:
        auth.user_of({"x-agent-user-id": "alice"})
    assert e.value.status == 401
    with pytest.raises(ProtocolError):
        auth.user_of({"authorization": "Bearer nope"})
    assert auth.user_of({"authorization": "Bearer secret", "x-agent-user-id": "alice"}) == "alice"


def test_principal_keys_wall_off_principals() -> None:
    auth = Authenticator(principal_keys=parse_principal_keys("alice:k1, bob:k2"))
    assert auth.user_of({"authorization": "Bearer k1"}) == "alice"
    assert auth.user_of({"authorization": "Bearer k2"}) == "bob"
    # A header subdivides a principal; it never names another principal's partition.
    assert auth.user_of({"authorization": "Bearer k2", "x-agent-user-id": "alice"}) == "bob/alice"
    with pytest.raises(ProtocolError):
        auth.user_of({"authorization": "Bearer k3"})


def test_bad_principal_key_entries_are_refused() -> None:
    with pytest.raises(ValueError, match="principal:key"):
        parse_principal_keys("alice")
    assert parse_principal_keys("") == {}


def test_bad_user_header_is_400() -> None:
    with pytest.raises(ProtocolError) as e:
        Authenticator().user_of({"x-agent-user-id": "bad\x00id"})
    assert e.value.status == 400
