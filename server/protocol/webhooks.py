"""Webhook events on the wire: OpenAI's payloads and the Standard Webhooks signature.

Invariant: pure (stdlib only). A payload is exactly OpenAI's `response.*` webhook event
(`id` "evt_...", `type`, `created_at`, `data: {"id": <response id>}`, `object: "event"`); a
response that waits for a person sends OpenAI's `agent.session.action_required` event, its
`data.id` the response's id, `data.required_action.type` the first waiting item's type, and
`data.required_action.items` every output item waiting for an answer (the calls to approve or
answer, as the response shows them). `signature_headers` signs the exact bytes sent:
`webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`
keyed by the secret's base64-decoded part, which is what
`openai.OpenAI().webhooks.unwrap(..., secret=...)` verifies.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Literal

WebhookType = Literal[
    "response.completed",
    "response.failed",
    "response.cancelled",
    "response.incomplete",
    "agent.session.action_required",
]

ACTION_REQUIRED: WebhookType = "agent.session.action_required"

# The terminal status of a response -> the webhook event it sends.
EVENT_TYPES: dict[str, WebhookType] = {
    "completed": "response.completed",
    "failed": "response.failed",
    "cancelled": "response.cancelled",
    "incomplete": "response.incomplete",
}

SECRET_PREFIX = "whsec_"


def new_event_id() -> str:
    return "evt_" + secrets.token_hex(24)


def event_payload(
    event_id: str,
    event_type: WebhookType,
    created_at: int,
    response_id: str,
    waiting: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The body of a webhook event, as sent (compact JSON); `waiting`: the output items an
    `agent.session.action_required` event carries."""
    data: dict[str, Any] = {"id": response_id}
    if event_type == ACTION_REQUIRED:
        first = str(waiting[0].get("type")) if waiting else "function_call"
        data["required_action"] = {"type": first, "items": [dict(i) for i in waiting]}
    body = {
        "id": event_id,
        "object": "event",
        "type": event_type,
        "created_at": created_at,
        "data": data,
    }
    return json.dumps(body, separators=(",", ":"))


def parse_secret(secret: str) -> bytes:
    """The signing key of a `whsec_<base64>` secret; ValueError if it is not one."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a webhook secret looks like whsec_<base64 key>")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the part after whsec_ is not valid base64") from None
    if len(key) < 16:
        raise ValueError("the key is shorter than 16 bytes; use 24 random bytes or more")
    return key


def sign(key: bytes, webhook_id: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def signature_headers(key: bytes, webhook_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of one delivery attempt."""
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(key, webhook_id, timestamp, body),
        "content-type": "application/json",
    }
