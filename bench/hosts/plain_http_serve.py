"""The plain-HTTP reference's server: a bench workflow over SSE, on uvicorn, with nothing stored.

Run as `python bench/hosts/plain_http_serve.py --app NAME --port P` (bench/hosts/plain_http.py).
`POST /responses` drives a fresh workflow of bench/apps.py the way our host and the floor drive it
(`workflow.as_agent().run(input, stream=True, checkpoint_storage=InMemoryCheckpointStorage())`)
and writes each update that carries text to the response at once, as one
`response.output_text.delta` SSE frame, between a `response.created` and a `response.completed`
frame. Nothing else: no Responses mapping of items, no database, no recovery, no middleware. On
the same uvicorn as ours (uvloop, httptools) and the same machine, its CPU per token is what any
host pays that runs the framework and streams each token over HTTP as it is made, the least a
Responses host can cost: the floor plus the HTTP of each token.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent_framework import InMemoryCheckpointStorage

from bench import apps

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _frame(event_type: str, seq: int, data: dict[str, Any]) -> bytes:
    return f"event: {event_type}\nid: {seq}\ndata: {json.dumps(data)}\n\n".encode()


def make_app(name: str) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    factory = getattr(apps, name)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        if scope["path"] == "/readiness":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        text = json.loads(body)["input"]
        head = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        seq = 0
        created = {"type": "response.created", "sequence_number": seq}
        await send(
            {
                "type": "http.response.body",
                "body": _frame("response.created", seq, created),
                "more_body": True,
            }
        )
        workflow = factory()
        agent = workflow.as_agent(name=workflow.name)
        async for update in agent.run(text, stream=True, checkpoint_storage=InMemoryCheckpointStorage()):
            if update.text:
                seq += 1
                delta = {
                    "type": "response.output_text.delta",
                    "sequence_number": seq,
                    "item_id": update.message_id or "",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": update.text,
                }
                frame = _frame("response.output_text.delta", seq, delta)
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        seq += 1
        done = {"type": "response.completed", "sequence_number": seq}
        await send({"type": "http.response.body", "body": _frame("response.completed", seq, done)})

    return app


def main() -> None:
    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    uvicorn.run(
        make_app(args.app),
        host="127.0.0.1",
        port=args.port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
