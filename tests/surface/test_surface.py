"""`/v1/models`, `responses/compact`, `responses/input_tokens` and the CORS preflight.

No POST an openai SDK makes is a 405: compact answers its previous_response_id form (the
stored output, validated as the SDK's `CompactedResponse`) and a 501 naming what is not
offered; input_tokens is a 501 saying why; `/models` lists the hosted app.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
from openai.types import Model
from openai.types.responses import CompactedResponse

from tests.support.inprocess import InProcessServer

ORIGIN = "http://127.0.0.1:9999"


@pytest.fixture
def srv(tmp_path: object) -> Iterator[InProcessServer]:
    env = {"DURABLE_RESPONSES_CORS_ORIGINS": ORIGIN}
    with InProcessServer(f"sqlite:///{tmp_path}/s.db", env=env) as s:
        yield s


def test_models_list_the_hosted_app(srv: InProcessServer) -> None:
    client = srv.client()
    models = client.models.list()
    assert [m.id for m in models] == ["echo"]
    Model.model_validate(models.data[0].model_dump())
    assert client.models.retrieve("echo").id == "echo"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-nope")


def test_compact_and_input_tokens(srv: InProcessServer) -> None:
    client = srv.client()
    r = client.responses.create(model="any", input="keep this")
    compacted = client.responses.compact(model="any", previous_response_id=r.id)
    CompactedResponse.model_validate(compacted.model_dump())
    assert compacted.object == "response.compaction"
    assert [o.id for o in compacted.output] == [o.id for o in r.output]
    with pytest.raises(openai.NotFoundError):
        client.responses.compact(model="any", previous_response_id="resp_missing")
    for call in (
        lambda: client.responses.compact(model="any", input="summarize this"),
        lambda: client.responses.input_tokens.count(model="any", input="count me"),
    ):
        with pytest.raises(openai.APIStatusError) as err:
            call()
        assert err.value.status_code == 501 and "does not offer" in err.value.message
    for path in ("/v1/responses/compact", "/responses/input_tokens"):
        assert httpx.post(srv.base_url + path, json={}).status_code != 405
    # Not offered is final: the SDKs would otherwise retry a 501 twice.
    refused = httpx.post(srv.base_url + "/responses/input_tokens", json={"model": "any", "input": "x"})
    assert refused.status_code == 501 and refused.headers["x-should-retry"] == "false"


def test_cors_preflight_allows_what_a_browser_client_sends(srv: InProcessServer) -> None:
    pre = httpx.options(
        srv.base_url + "/v1/responses",
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, last-event-id, x-stainless-os",
        },
    )
    assert pre.status_code == 200
    assert pre.headers["access-control-allow-origin"] == ORIGIN
    allowed = pre.headers["access-control-allow-headers"].lower()
    for header in ("authorization", "last-event-id", "content-type"):
        assert header in allowed
    r = httpx.get(srv.base_url + "/v1/models", headers={"Origin": ORIGIN})
    assert r.headers["access-control-allow-origin"] == ORIGIN
    assert "x-request-id" in r.headers["access-control-expose-headers"].lower()
    other = httpx.options(
        srv.base_url + "/v1/responses",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers


def test_cors_is_off_by_default(tmp_path: object) -> None:
    with InProcessServer(f"sqlite:///{tmp_path}/n.db") as s:
        r = httpx.get(s.base_url + "/v1/models", headers={"Origin": ORIGIN})
        assert "access-control-allow-origin" not in r.headers
