"""The chaos proxy does what the scenarios rely on (against a plain TCP echo server, ~1 s).

Each fault is checked from the client's side the way a database driver would see it: a
refused connect, a reset (not a clean close), bytes held and then delivered in order, a delay
at least as long as asked, and only the marked connection reset by `block`.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.proxy import LISTEN_MARKER, Proxy

pytestmark = pytest.mark.chaos


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):  # the proxy resets on purpose
            while data := self.request.recv(65536):
                self.request.sendall(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def echo_proxy() -> Iterator[Proxy]:
    server = _Server(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    proxy = Proxy(server.server_address[1], name="echo-proxy").start()
    try:
        yield proxy
    finally:
        proxy.close()
        server.shutdown()
        server.server_close()


def _connect(proxy: Proxy) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    s.settimeout(5)
    return s


def _roundtrip(s: socket.socket, data: bytes) -> bytes:
    s.sendall(data)
    got = b""
    while len(got) < len(data):
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def test_forwards_both_ways(echo_proxy: Proxy) -> None:
    with contextlib.closing(_connect(echo_proxy)) as s:
        assert _roundtrip(s, b"hello") == b"hello"
    assert echo_proxy.stats.accepted == 1


def test_cut_resets_open_connections_and_refuses_new_ones_until_restore(echo_proxy: Proxy) -> None:
    s = _connect(echo_proxy)
    assert _roundtrip(s, b"x") == b"x"
    assert echo_proxy.cut() == 1
    with pytest.raises(ConnectionResetError):
        s.sendall(b"y")
        if not s.recv(10):  # a clean close would read b"": the proxy must reset instead
            raise AssertionError("closed cleanly instead of reset")
    s.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", echo_proxy.port), timeout=2)
    echo_proxy.restore()
    with contextlib.closing(_connect(echo_proxy)) as s2:
        assert _roundtrip(s2, b"back") == b"back"


def test_pause_holds_bytes_and_restore_delivers_them_in_order(echo_proxy: Proxy) -> None:
    with contextlib.closing(_connect(echo_proxy)) as s:
        echo_proxy.pause()
        s.sendall(b"one,")
        s.sendall(b"two")
        s.settimeout(0.3)
        with pytest.raises(TimeoutError):
            s.recv(10)
        echo_proxy.restore()
        s.settimeout(5)
        got = b""
        while len(got) < 7:
            got += s.recv(10)
        assert got == b"one,two"


def test_slow_delays_each_direction(echo_proxy: Proxy) -> None:
    with contextlib.closing(_connect(echo_proxy)) as s:
        echo_proxy.slow(0.15)
        t = time.monotonic()
        assert _roundtrip(s, b"z") == b"z"
        assert time.monotonic() - t >= 0.3  # 0.15 s each way
        echo_proxy.restore()
        t = time.monotonic()
        assert _roundtrip(s, b"z") == b"z"
        assert time.monotonic() - t < 0.15


def test_block_resets_only_the_marked_connection(echo_proxy: Proxy) -> None:
    plain = _connect(echo_proxy)
    listener = _connect(echo_proxy)
    assert _roundtrip(listener, b'LISTEN "chan"') == b'LISTEN "chan"'
    assert echo_proxy.open_connections(LISTEN_MARKER) == 1
    assert echo_proxy.block(LISTEN_MARKER) == 1
    with pytest.raises(ConnectionResetError):
        listener.sendall(b"?")
        if not listener.recv(10):
            raise AssertionError("closed cleanly instead of reset")
    listener.close()
    again = _connect(echo_proxy)
    with pytest.raises(ConnectionResetError):  # a new LISTEN is reset before it reaches the server
        again.sendall(b"LIS")
        time.sleep(0.05)
        again.sendall(b'TEN "chan"')  # the marker spans two chunks
        while again.recv(10):  # "LIS" went through (and is echoed); the rest never does
            pass
        raise AssertionError("closed cleanly instead of reset")
    again.close()
    assert _roundtrip(plain, b"still fine") == b"still fine"
    echo_proxy.restore()
    with contextlib.closing(_connect(echo_proxy)) as s:
        assert _roundtrip(s, b'LISTEN "chan"') == b'LISTEN "chan"'
    plain.close()


def test_reset_is_one_shot(echo_proxy: Proxy) -> None:
    a = _connect(echo_proxy)
    assert _roundtrip(a, b"a") == b"a"
    assert echo_proxy.reset() == 1
    a.close()
    with contextlib.closing(_connect(echo_proxy)) as b:
        assert _roundtrip(b, b"b") == b"b"


def test_reset_counts_connections_cut_in_the_middle_of_a_request(echo_proxy: Proxy) -> None:
    idle = _connect(echo_proxy)
    assert _roundtrip(idle, b"done") == b"done"  # answered: not in flight
    busy = _connect(echo_proxy)
    echo_proxy.slow(0.2)
    busy.sendall(b"question")  # reaches the server after 0.2 s, its answer the client 0.2 s later
    time.sleep(0.3)
    assert echo_proxy.reset() == 2
    assert echo_proxy.stats.reset_in_flight == 1
    idle.close()
    busy.close()
