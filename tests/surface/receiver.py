"""A webhook receiver on loopback for the tests: a real HTTP server that verifies every
delivery with the openai SDK's `webhooks.unwrap` and answers as the test tells it.

`fail_first`: answer 500 to that many attempts first. `hold_first`: keep the first attempt
open (no answer) until `release()` (a server killed meanwhile never hears back).
"""

from __future__ import annotations

import base64
import http.server
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from openai import OpenAI

from tests.support import db
from tests.support.waits import wait_for_value

SECRET = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass
class Delivery:
    webhook_id: str
    event: Any  # the SDK's parsed event
    body: bytes


@dataclass
class Receiver:
    fail_first: int = 0
    hold_first: bool = False
    secret: str = SECRET
    attempts: int = 0
    deliveries: list[Delivery] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # signatures that did not verify
    _held: threading.Event = field(default_factory=threading.Event)
    holding: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Receiver:
        receiver = self
        client = OpenAI(api_key="unused", base_url="http://127.0.0.1:9")

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver._lock:
                    receiver.attempts += 1
                    attempt = receiver.attempts
                if attempt == 1 and receiver.hold_first:
                    receiver.holding.set()
                    receiver._held.wait(60)
                    return  # no answer: the connection just closes
                if attempt <= receiver.fail_first:
                    self.send_response(500)
                    self.end_headers()
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    event = client.webhooks.unwrap(body, headers, secret=receiver.secret)
                except Exception as exc:
                    receiver.refused.append(repr(exc))
                    self.send_response(400)
                    self.end_headers()
                    return
                with receiver._lock:
                    receiver.deliveries.append(Delivery(headers["webhook-id"], event, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks"

    def release(self) -> None:
        self._held.set()

    def wait_for(self, n: int, timeout: float = 30) -> list[Delivery]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.deliveries) >= n:
                return list(self.deliveries)
            time.sleep(0.05)
        raise AssertionError(
            f"{len(self.deliveries)} deliveries after {timeout} s, wanted {n} ({self.refused})"
        )

    def stop(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def env(self, **extra: str) -> dict[str, str]:
        """The server's environment for webhooks to this receiver (fast retries for tests)."""
        return {
            "DURABLE_RESPONSES_WEBHOOK_URL": self.url,
            "DURABLE_RESPONSES_WEBHOOK_SECRET": self.secret,
            "DURABLE_RESPONSES_WEBHOOK_RETRY_SECONDS": "0.2",
            "DURABLE_RESPONSES_WEBHOOK_POLL_SECONDS": "0.2",
            **extra,
        }


def webhook_rows(database_url: str) -> list[tuple[str, str, str, int]]:
    """Every webhook delivery the database holds: (response id, event type, status, attempts),
    in the order the events were made."""
    rows = db.query(
        database_url,
        "SELECT e.response_id, e.type, d.status, d.attempts FROM webhook_events AS e"
        " JOIN webhook_deliveries AS d ON d.event_id = e.id ORDER BY e.created_at, e.id",
    )
    return [(str(r[0]), str(r[1]), str(r[2]), int(r[3])) for r in rows]


def wait_settled(database_url: str, n: int, timeout: float = 30) -> list[tuple[str, str, str, int]]:
    """Wait until the database holds `n` webhook deliveries and none is pending; returns them.
    A delivery is attempted only while it is pending (its attempt holds its lease until the
    outcome is recorded): once none is, nothing more is sent. This is what a test waits on
    instead of leaving room for a wrong extra delivery."""
    rows: list[tuple[str, str, str, int]] = wait_for_value(
        lambda: webhook_rows(database_url),
        lambda rs: len(rs) >= n and all(r[2] != "pending" for r in rs),
        timeout,
        message=f"{n} webhook deliveries, none pending",
    )
    return rows
