"""`python -m tests.support.byte_clock BASE_URL BODY`: POST `BODY` to `/responses` and note when
each chunk of the stream arrived, doing nothing else while it lasts; then print (JSON) when the
chunk that completed the last `response.output_text.delta` frame arrived (`time.time()`), how
many text deltas there were and the terminal event.

For timing a server from outside: a client that parses frames as they come (httpx, the SDK)
falls behind a burst of thousands of frames, and then measures its own parsing, not the server.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from urllib.parse import urlsplit

DELTA = b"event: response.output_text.delta\n"
TERMINALS = ("response.completed", "response.failed", "response.incomplete", "response.cancelled")


def main(base_url: str, body: str) -> dict[str, object]:
    url = urlsplit(base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    payload = body.encode()
    head = (
        f"POST /responses HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    arrivals: list[tuple[int, float]] = []  # (bytes received so far, when)
    parts: list[bytes] = []
    received = 0
    with socket.create_connection((host, port), timeout=60) as s:
        s.sendall(head.encode() + payload)
        while chunk := s.recv(1 << 20):
            received += len(chunk)
            arrivals.append((received, time.time()))
            parts.append(chunk)
    data = b"".join(parts)
    last = data.rfind(DELTA)
    # The frame ends at its blank line (chunked transfer framing may sit in between: the body
    # is matched loosely, by the end of its `data:` line).
    end = data.find(b"\n", data.find(b"data: ", last)) + 1 if last >= 0 else -1
    return {
        "deltas": data.count(DELTA),
        "last": next((t for size, t in arrivals if size >= end), None) if last >= 0 else None,
        "terminal": next((t for t in TERMINALS if f"event: {t}\n".encode() in data), None),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
