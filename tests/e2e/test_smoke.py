"""Smoke test: the openai client against a real server on both dialects."""

from __future__ import annotations

from pathlib import Path

import pytest
import uvicorn

from server import cli
from server.settings import Settings
from tests.conftest import ServerProcess
from tests.schema_validator import validate_event, validate_response


def test_create_stream_retrieve(server: ServerProcess) -> None:
    client = server.client()
    r = client.responses.create(input="hello big world")
    assert r.status == "completed"
    assert r.output_text == "hello big world"
    validate_response(r.model_dump(mode="json", exclude_unset=True))
    seqs = []
    with client.responses.stream(model="echo", input="one two") as stream:
        for event in stream:
            validate_event(event.model_dump(mode="json", exclude_unset=True))
            seqs.append(event.sequence_number)
        final = stream.get_final_response()
    assert final.output_text == "one two"
    assert seqs == list(range(len(seqs)))
    again = client.responses.retrieve(final.id)
    assert again.output_text == "one two"


def test_serves_on_uvloop(tmp_path: Path) -> None:
    """The server runs on uvloop with uvicorn's httptools parser (dependencies of the package;
    about 1 ms less per request on the way to the first event than the stdlib loop and h11)."""
    srv = ServerProcess(
        database_url=f"sqlite:///{tmp_path / 'x.db'}", app=None, workdir=tmp_path, log_level="info"
    )
    try:
        srv.start()
        line = next((ln for ln in srv.log().splitlines() if "serving" in ln), "")
        assert "event loop: uvloop" in line, srv.log()
        # SQLite's writer thread gets the GIL back within 0.5 ms of a busy event loop (cli.py).
        assert "GIL switch interval: 0.5 ms" in line, srv.log()
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
