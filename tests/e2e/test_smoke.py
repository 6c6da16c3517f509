"""Smoke test: the openai client against a real server on both dialects; the `serve` command's
own start-up (event loop, HTTP parser, switch interval, migrating a new SQLite file)."""

from __future__ import annotations

from pathlib import Path

import pytest
import uvicorn

from durable_responses import cli
from durable_responses.settings import Settings
from tests.schema_validator import validate_event, validate_response
from tests.support.inprocess import InProcessServer
from tests.support.responses import dump
from tests.support.servers import ServerProcess


def test_create_stream_retrieve(shared_server: InProcessServer) -> None:
    client = shared_server.client()
    r = client.responses.create(input="hello big world")
    assert r.status == "completed"
    assert r.output_text == "hello big world"
    validate_response(r.model_dump(mode="json", exclude_unset=True))
    seqs = []
    with client.responses.stream(model="echo", input="one two") as stream:
        for event in stream:
            validate_event(dump(event))
            seqs.append(event.sequence_number)
        final = stream.get_final_response()
    assert final.output_text == "one two"
    assert seqs == list(range(len(seqs)))
    again = client.responses.retrieve(final.id)
    assert again.output_text == "one two"


def test_serves_on_uvloop(tmp_path: Path) -> None:
    """The server runs on uvloop with uvicorn's httptools parser (dependencies of the package;
    about 1 ms less per request on the way to the first event than the stdlib loop and h11).
    `python -m durable_responses serve` itself (no spare), on a SQLite file that does not exist yet: the
    server creates and migrates it."""
    db_file = tmp_path / "x.db"
    srv = ServerProcess(
        database_url=f"sqlite:///{db_file}", app=None, workdir=tmp_path, log_level="info", cold=True
    )
    try:
        srv.start()
        line = next((ln for ln in srv.log().splitlines() if "serving" in ln), "")
        assert "event loop: uvloop" in line, srv.log()
        # SQLite's writer thread gets the GIL back within 0.5 ms of a busy event loop (cli.py).
        assert "GIL switch interval: 0.5 ms" in line, srv.log()
        # It made the schema of the new file (a response can be stored and read back).
        created = srv.client().responses.create(model="m", input="stored")
        assert srv.client().responses.retrieve(created.id).output_text == "stored"
        # The parser uvicorn's default ("auto") picks where httptools is installed.
        config = uvicorn.Config(app=_noop_app)
        config.load()
        assert config.http_protocol_class.__name__ == "HttpToolsProtocol"
    finally:
        srv.terminate()


def test_a_bad_switch_interval_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("fast", "0", "-1"):
        monkeypatch.setenv("DURABLE_RESPONSES_SWITCH_INTERVAL_MS", bad)
        with pytest.raises(SystemExit, match="DURABLE_RESPONSES_SWITCH_INTERVAL_MS"):
            cli.main(["serve"])
    monkeypatch.setenv("DURABLE_RESPONSES_SWITCH_INTERVAL_MS", "2")
    assert Settings.from_env().process.switch_interval_ms == 2.0


async def _noop_app(scope: object, receive: object, send: object) -> None:
    return None
