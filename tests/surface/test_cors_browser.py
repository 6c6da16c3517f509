"""A page from another origin streams a response through CORS, in headless Chromium.

The server runs with `DURABLE_RESPONSES_CORS_ORIGINS` naming the page's origin (a second
loopback port); the page (tests/node/page.html) streams one response with `fetch` (a POST
with `Authorization`, so a preflight) and replays another with `EventSource`. Without the
setting, the browser refuses both.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from functools import partial

import pytest

from tests.support.inprocess import InProcessServer
from tests.support.tools import need

from . import node


@pytest.fixture(autouse=True)
def _chromium() -> None:
    need("chromium", "apt-get install chromium")


@pytest.fixture
def page_origin() -> Iterator[str]:
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(node.NODE_DIR))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined, method-assign]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _browse(page_origin: str, server: str) -> dict[str, object]:
    out = node.run("browser.mjs", {"PAGE_URL": f"{page_origin}/page.html?server={server}"}, timeout=90)
    return dict(json.loads(out.strip().splitlines()[-1]))


def test_a_page_from_another_origin_streams_through_cors(tmp_path: object, page_origin: str) -> None:
    url = f"sqlite:///{tmp_path}/cors.db"
    with InProcessServer(url, env={"DURABLE_RESPONSES_CORS_ORIGINS": page_origin}) as srv:
        result = _browse(page_origin, srv.base_url)
    assert "error" not in result, result
    fetched, sourced = result["fetched"], result["sourced"]
    assert isinstance(fetched, dict) and isinstance(sourced, dict)
    assert fetched["text"] == "hello from the browser"
    assert fetched["types"][0] == "response.created" and fetched["types"][-1] == "response.completed"
    assert fetched["requestId"]  # an exposed header
    assert sourced["text"] == "then with EventSource"
    assert all(i.isdigit() for i in sourced["ids"])  # SSE ids: what EventSource resumes from


def test_without_the_setting_the_browser_refuses(tmp_path: object, page_origin: str) -> None:
    url = f"sqlite:///{tmp_path}/nocors.db"
    with InProcessServer(url) as srv:
        result = _browse(page_origin, srv.base_url)
    assert "error" in result
