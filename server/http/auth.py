"""Who is calling: API keys and the per-user partition (`x-agent-user-id`).

Invariant: every request resolves to exactly one user id, which scopes every read and write
(tenants are walls). With per-principal keys (`DURABLE_RESPONSES_API_KEYS=alice:k1,bob:k2`) the
key's principal is the partition, and an `x-agent-user-id` header only subdivides it
(`alice/<header>`), so no key holder can reach another principal's responses. With the single
shared key (or none) the header alone is the partition, as on Foundry, where the platform sets it.
An `x-agent-chat-isolation-key` header subdivides the partition once more, one per chat.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from ..protocol import errors
from ..protocol.ids import is_valid_user_id

DEFAULT_USER = ""
# Foundry's per-chat partition inside a user's (`x-agent-chat-isolation-key`).
CHAT_KEY_HEADER = "x-agent-chat-isolation-key"


def parse_principal_keys(raw: str) -> dict[str, str]:
    """`"alice:key1,bob:key2"` -> {"key1": "alice", "key2": "bob"}."""
    keys: dict[str, str] = {}
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            continue
        principal, sep, key = entry.partition(":")
        if not sep or not principal.strip() or not key.strip():
            raise ValueError(
                "DURABLE_RESPONSES_API_KEYS entries must look like principal:key "
                f"(got an entry starting {entry.split(':')[0]!r})"
            )
        keys[key.strip()] = principal.strip()
    return keys


class Authenticator:
    def __init__(self, api_key: str | None = None, principal_keys: Mapping[str, str] | None = None) -> None:
        self._shared = api_key
        self._principals = dict(principal_keys or {})

    @property
    def required(self) -> bool:
        return self._shared is not None or bool(self._principals)

    def user_of(self, headers: Mapping[str, str]) -> str:
        principal = self._principal(headers)
        user = headers.get("x-agent-user-id") or ""
        if user and not is_valid_user_id(user):
            raise errors.bad_request("Invalid x-agent-user-id header.", param="x-agent-user-id")
        if principal:
            user = f"{principal}/{user}" if user else principal
        chat = headers.get(CHAT_KEY_HEADER) or ""
        if chat:
            if not is_valid_user_id(chat):
                raise errors.bad_request(f"Invalid {CHAT_KEY_HEADER} header.", param=CHAT_KEY_HEADER)
            # Each chat is its own partition within the user's (a digest: bounded length).
            user = f"{user}#chat:{hashlib.sha256(chat.encode()).hexdigest()[:32]}"
        return user or DEFAULT_USER

    def _principal(self, headers: Mapping[str, str]) -> str:
        if not self.required:
            return ""
        scheme, _, token = headers.get("authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            for key, principal in self._principals.items():
                if hmac.compare_digest(token, key):
                    return principal
            if self._shared is not None and hmac.compare_digest(token, self._shared):
                return ""
        raise errors.unauthorized(
            "Missing or wrong API key: send `Authorization: Bearer <key>` with a key the server was "
            "started with (DURABLE_RESPONSES_API_KEY or DURABLE_RESPONSES_API_KEYS)."
        )
