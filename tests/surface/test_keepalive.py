"""Every client reads a stream that outlasts the SSE keep-alive interval, every tick once, on
SQLite and PostgreSQL (server/http/sse.py: a keep-alive is a comment line with no blank line).

With a blank line after the comment, openai-python (and agent-framework's OpenAI clients, built
on it) dispatched an empty event carrying the last `id:` and failed on its JSON at the first
keep-alive. The readers are the unmodified clients: openai-python sync, async,
`responses.stream(...)` (create and resume), `retrieve(stream=True, starting_after=N)`,
openai-node (create and retrieve), the Vercel AI SDK's `streamText`, agent-framework's
`OpenAIChatClient`; plus a raw read that checks the keep-alives were really sent between frames.
All readers of one test run at once against one server, so the 20-second stream with the
default interval costs ~20 s per database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai

from durable_responses.http.settings import HttpSettings
from durable_responses.http.sse import KEEPALIVE
from tests.support.inprocess import InProcessServer
from tests.support.servers import free_port
from tests.support.sse import check_sequence, parse_sse
from tests.support.tools import missing

from . import node

APP = "durable_responses.examples.countdown:countdown"
AFTER = 1  # resume after response.created and response.in_progress: before the first tick


def _ticks(count: int) -> list[str]:
    return [f"tick {n}" for n in range(count, -1, -1)]


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base, api_key="test-key", max_retries=0, timeout=120)


def _deltas(events: Any) -> list[str]:
    return [e.delta for e in events if e.type == "response.output_text.delta"]


def read_sync(base: str, text: str) -> list[str]:
    return _deltas(_client(base).responses.create(model="countdown", input=text, stream=True))


def read_async(base: str, text: str) -> list[str]:
    async def read() -> list[str]:
        client = openai.AsyncOpenAI(base_url=base, api_key="test-key", max_retries=0, timeout=120)
        async with client:
            stream = await client.responses.create(model="countdown", input=text, stream=True)
            return [e.delta async for e in stream if e.type == "response.output_text.delta"]

    return asyncio.run(read())


def read_stream_helper(base: str, text: str) -> list[str]:
    with _client(base).responses.stream(model="countdown", input=text) as stream:
        deltas = _deltas(stream)
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == "".join(deltas)
    return deltas


def _background(client: openai.OpenAI, text: str) -> str:
    return client.responses.create(model="countdown", input=text, background=True).id


def read_retrieve(base: str, text: str) -> list[str]:
    client = _client(base)
    events = list(client.responses.retrieve(_background(client, text), stream=True, starting_after=AFTER))
    seqs = [e.sequence_number for e in events]
    assert seqs == list(range(AFTER + 1, AFTER + 1 + len(seqs))), seqs
    return _deltas(events)


def read_stream_resume(base: str, text: str) -> list[str]:
    client = _client(base)
    rid = _background(client, text)
    with client.responses.stream(response_id=rid, starting_after=AFTER) as stream:
        return _deltas(stream)


def read_agent_framework(base: str, text: str) -> list[str]:
    from agent_framework import Message
    from agent_framework_openai import OpenAIChatClient

    async def read() -> list[str]:
        client = OpenAIChatClient(model="countdown", api_key="test-key", base_url=base)
        stream = client.get_response([Message(role="user", contents=[text])], stream=True)
        # Its updates carry each delta, then each item's whole text again (`output_text.done`,
        # merge mode "replace"): the deltas are what a streaming reader shows.
        return [u.text async for u in stream if u.raw_representation.type == "response.output_text.delta"]

    return asyncio.run(read())


def read_node(base: str, text: str) -> dict[str, Any]:
    out = node.run("keepalive.mjs", {"BASE_URL": base, "INPUT": text, "AFTER": str(AFTER)}, timeout=180)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert result["retrieve_first_seq"] == AFTER + 1, result
    return result


def read_raw(base: str, text: str) -> int:
    """The stream's bytes: every keep-alive sits between whole frames and is not followed by a
    blank line; the frames are the response's whole sequence. Returns the keep-alive count."""
    body = {"model": "countdown", "input": text, "stream": True}
    with httpx.stream("POST", base + "/responses", json=body, timeout=120) as r:
        assert r.status_code == 200
        raw = r.read().decode()
    count = raw.count(KEEPALIVE.decode())
    lines = raw.replace("\r\n", "\n").split("\n")
    for i, line in enumerate(lines):
        if line.startswith(":"):
            assert i == 0 or lines[i - 1] == "" or lines[i - 1].startswith(":"), (
                f"a comment inside a frame: {line}"
            )
            assert lines[i + 1] != "", "a comment followed by a blank line (dispatches an event)"
    frames = parse_sse(raw)
    check_sequence([f.json for f in frames])
    assert all(f.id == str(f.json["sequence_number"]) for f in frames)
    return count


def _read_all(srv: InProcessServer, text: str) -> dict[str, Any]:
    """Every reader at once against `srv`; each one's result, or the exception it raised."""
    base = srv.base_url + "/v1"
    readers: dict[str, Callable[[str, str], Any]] = {
        "python sync": read_sync,
        "python async": read_async,
        "python responses.stream": read_stream_helper,
        "python retrieve(stream=True, starting_after)": read_retrieve,
        "python responses.stream(response_id, starting_after)": read_stream_resume,
        "agent-framework OpenAIChatClient": read_agent_framework,
        "node": read_node,
        "raw": read_raw,
    }
    node.ensure_packages()
    with ThreadPoolExecutor(len(readers)) as pool:
        futures = {name: pool.submit(fn, base, text) for name, fn in readers.items()}
    results: dict[str, Any] = {}
    for name, future in futures.items():
        exc = future.exception()
        results[name] = f"{type(exc).__name__}: {exc}" if exc is not None else future.result()
    return results


def _check(results: dict[str, Any], count: int, min_keepalives: int) -> None:
    expected = _ticks(count)
    raw = results.pop("raw")
    assert isinstance(raw, int) and raw >= min_keepalives, f"keep-alives sent: {raw}"
    js = results.pop("node")
    if isinstance(js, dict):
        results["node create"] = js["create"]
        results["node retrieve(stream, starting_after)"] = js["retrieve"]
        results["vercel ai streamText"] = js["vercel"]
    else:
        results["node"] = js
    wrong = {name: got for name, got in results.items() if got != expected}
    assert not wrong, f"expected {expected} from every client; these differ: {wrong}"


def test_every_client_reads_across_many_keepalives(
    shared_servers: Callable[..., InProcessServer],
) -> None:
    """A short interval (0.2 s) and 0.5 s between ticks: two or three keep-alives in every gap,
    some right before the terminal event."""
    srv = shared_servers(APP, env={"SSE_KEEPALIVE_INTERVAL": "0.2"})
    _check(_read_all(srv, "4 delay=0.5"), 4, min_keepalives=8)


def test_every_client_reads_a_20_second_countdown_with_the_default_keepalive(
    shared_servers: Callable[..., InProcessServer],
) -> None:
    srv = shared_servers(APP)
    assert srv.settings.http.keepalive_seconds == HttpSettings().keepalive_seconds == 15.0
    _check(_read_all(srv, "19 delay=1"), 19, min_keepalives=1)


@contextlib.contextmanager
def _nginx(upstream: int, workdir: Path, *, read_timeout: float) -> Iterator[str]:
    """nginx as a reverse proxy to `upstream` that closes a response after `read_timeout`
    seconds without a byte from it (`proxy_read_timeout`, 60 s by default); its base URL."""
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if nginx is None:
        missing("nginx is not installed (apt-get install nginx)")
    port = free_port()
    conf = workdir / "nginx.conf"
    conf.write_text(
        f"""worker_processes 1; daemon off; pid {workdir}/nginx.pid; error_log {workdir}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {workdir}/body; proxy_temp_path {workdir}/proxy;
  fastcgi_temp_path {workdir}/fastcgi; uwsgi_temp_path {workdir}/uwsgi; scgi_temp_path {workdir}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://127.0.0.1:{upstream};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_read_timeout {read_timeout}s;
    }}
  }}
}}
"""
    )
    proc = subprocess.Popen([nginx, "-c", str(conf), "-e", str(workdir / "error.log")])
    try:
        deadline = time.monotonic() + 10
        while True:
            assert proc.poll() is None, (workdir / "error.log").read_text()
            try:
                httpx.get(f"http://127.0.0.1:{port}/liveness", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "nginx did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


def test_keepalives_keep_a_quiet_stream_open_through_a_proxy(tmp_path: Path) -> None:
    """Through nginx with a 2-second idle timeout, 3 seconds between ticks: the comment lines
    (no blank line) reach the proxy and keep the stream open, every tick arrives once; without
    keep-alives the same proxy cuts the stream at the first quiet gap. (One database: the
    proxy sees bytes, not rows.)"""
    text = "1 delay=3"
    for interval, kept in (("0.5", True), ("3600", False)):
        env = {"SSE_KEEPALIVE_INTERVAL": interval}
        with InProcessServer(f"sqlite:///{tmp_path / f'db-{interval}.sqlite'}", APP, env=env) as srv:
            work = tmp_path / f"nginx-{interval}"
            work.mkdir()
            with _nginx(srv.port, work, read_timeout=2) as base:
                if kept:
                    with ThreadPoolExecutor(2) as pool:
                        ticks, raw = pool.submit(read_sync, base, text), pool.submit(read_raw, base, text)
                        assert ticks.result() == _ticks(1)
                        assert raw.result() >= 8
                else:
                    try:
                        got: Any = read_sync(base, text)
                    except openai.APIConnectionError as exc:
                        got = exc
                    assert isinstance(got, openai.APIConnectionError), f"the proxy did not cut it: {got}"
                    assert "upstream timed out" in (work / "error.log").read_text()
