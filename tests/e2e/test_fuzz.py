"""Property test: POST /responses with hundreds of generated bodies never yields a 5xx, and every
4xx carries the standard error body. One server per dialect (module scoped), a subprocess; each
run counts its own status codes."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.pg import _migrated_pg
from tests.support.responses import assert_error_shape
from tests.support.servers import ServerProcess

FIELDS = [
    "model",
    "input",
    "stream",
    "background",
    "store",
    "previous_response_id",
    "conversation",
    "tools",
    "tool_choice",
    "metadata",
    "instructions",
    "temperature",
    "top_p",
    "max_output_tokens",
    "parallel_tool_calls",
    "text",
    "truncation",
    "user",
    "reasoning",
    "include",
    "stream_options",
]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def fuzz_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    # Both dialects: PostgreSQL refuses what SQLite stores (NUL in text, for one).
    work = tmp_path_factory.mktemp("fuzz")
    if request.param == "sqlite":
        # The SQLite file lives in memory (tmpfs) where there is one: what this test checks
        # (no 5xx, the error body) does not depend on fsync, which was 16 of its 36 s on disk.
        shm = Path("/dev/shm")
        with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as db_dir:
            yield from _serve(f"sqlite:///{Path(db_dir) / 'fuzz.db'}", work)
    else:
        for url in _migrated_pg():
            yield from _serve(url, work)


def _serve(url: str, work: Path) -> Iterator[ServerProcess]:
    srv = ServerProcess(database_url=url, app=None, workdir=work).start()
    try:
        yield srv
    finally:
        srv.kill()


# Any code point, lone surrogates and NUL included.
any_text = st.text(st.characters(exclude_categories=()), max_size=20)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    any_text,
    st.sampled_from(
        ["", "resp_abc", "message", "user", "function_call_output", "input_text", "\x00", "\ud800"]
    ),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(st.text(max_size=10), st.sampled_from([*FIELDS, "type", "role", "content", "call_id"])),
            children,
            max_size=4,
        ),
    ),
    max_leaves=12,
)

# What PostgreSQL's text refuses (NUL), what UTF-8 cannot encode (a lone surrogate), control
# characters: in ids, references and cursors these reach the database as keys, not as JSON.
awkward_id = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["a\x00b", "\x00", "id\ud800", "\x01\x7f", "tab\tid", "msg_ok"]),
)
text_part = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["input_text", "output_text", "input_image", "bogus"]),
        "text": st.text(max_size=20),
    }
)
message_item = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "developer", "tool", "x"]),
        "content": st.one_of(st.text(min_size=1, max_size=20), st.lists(text_part, min_size=1, max_size=3)),
    },
    optional={
        "type": st.sampled_from(["message", "function_call_output", "item_reference", "nope"]),
        "id": awkward_id,
    },
)
fco_item = st.fixed_dictionaries(
    {
        "type": st.just("function_call_output"),
        "call_id": awkward_id,
        "output": st.one_of(st.text(max_size=10), json_values),
    }
)
awkward_text = st.sampled_from(["lone \ud800", "\udfff", "nul \x00 char", "\U0001f600", "\ufeff"])
reference_item = st.fixed_dictionaries({"type": st.just("item_reference"), "id": awkward_id})
approval_item = st.fixed_dictionaries(
    {"type": st.just("mcp_approval_response"), "approval_request_id": awkward_id, "approve": st.booleans()}
)
# Data URLs the model clients refuse (no comma, an unknown encoding, not base64) and good ones.
data_url = st.sampled_from(
    [
        "data:x",
        "data:",
        "data:image/png;base64",
        "data:image/png;gzip,AAAA",
        "data:image/png;base64;x=y,AAAA",
        "data:image/png;base64,A",
        "data:image/png;base64,iVBORw0KGgo=",
        "data:,hello",
        "https://example.com/a.png",
    ]
)
image_message = st.fixed_dictionaries(
    {
        "role": st.just("user"),
        "content": st.lists(
            st.one_of(
                st.fixed_dictionaries({"type": st.just("input_image"), "image_url": data_url}),
                st.fixed_dictionaries({"type": st.just("input_file"), "file_data": data_url}),
                st.fixed_dictionaries({"type": st.just("input_file"), "file_id": awkward_id}),
            ),
            min_size=1,
            max_size=2,
        ),
    }
)
valid_input = st.one_of(
    st.text(min_size=1, max_size=40),
    any_text,
    awkward_text,
    st.lists(
        st.one_of(message_item, fco_item, reference_item, approval_item, image_message),
        min_size=1,
        max_size=4,
    ),
)
tool = st.fixed_dictionaries(
    {"type": st.sampled_from(["function", "web_search", "custom"]), "name": st.text(max_size=12)},
    optional={"parameters": json_values, "description": st.text(max_size=10), "strict": st.booleans()},
)
base_body = st.fixed_dictionaries(
    {"model": st.sampled_from(["m", "echo"]), "input": valid_input},
    optional={
        "stream": st.booleans(),
        "background": st.just(False),
        "store": st.booleans(),
        "instructions": st.text(max_size=20),
        "metadata": st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3),
        "tools": st.lists(tool, max_size=2),
        "temperature": st.floats(0, 2),
        "max_output_tokens": st.integers(1, 1000),
        "conversation": st.one_of(st.text(max_size=12), st.fixed_dictionaries({"id": st.text(max_size=12)})),
        "previous_response_id": st.sampled_from(["resp_doesnotexist", "bad id", ""]),
    },
)


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    body = dict(draw(base_body))
    action = draw(st.sampled_from(["replace", "add", "remove", "none"]))
    if action == "replace":
        body[draw(st.sampled_from(FIELDS))] = draw(json_values)
    elif action == "add":
        body[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
    elif action == "remove" and body:
        body.pop(draw(st.sampled_from(sorted(body))))
    return body


bodies = st.one_of(json_values, mutated(), mutated())


def encode(body: Any) -> bytes:
    # ensure_ascii escapes lone surrogates; allow_nan lets NaN/Infinity reach the server.
    return json.dumps(body, ensure_ascii=True, allow_nan=True).encode()


# Bodies per dialect per run. Each is a request to a real server (~17 ms here); the validation
# itself is fuzzed in-process with more (tests/protocol/test_fuzz.py). A longer hunt:
# DURABLE_RESPONSES_FUZZ_EXAMPLES=5000.
EXAMPLES = int(os.environ.get("DURABLE_RESPONSES_FUZZ_EXAMPLES", "600"))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
@given(body=bodies)
def _property(client: httpx.Client, statuses: Counter[int], body: Any) -> None:
    r = client.post("/responses", content=encode(body), headers={"content-type": "application/json"})
    statuses[r.status_code] += 1
    assert r.status_code < 500, (r.status_code, r.text[:500], body)
    if 400 <= r.status_code < 500:
        assert_error_shape(r)
    else:
        assert r.status_code == 200, (r.status_code, r.text[:300])
        if r.headers["content-type"].startswith("application/json"):
            assert r.json()["object"] == "response"


def test_fuzz_create(fuzz_server: ServerProcess) -> None:
    with httpx.Client(base_url=fuzz_server.base_url, timeout=30) as client:
        statuses: Counter[int] = Counter()  # this database's run only
        _property(client, statuses)
        print("fuzz status counts:", dict(sorted(statuses.items())))
        # Both the rejection and the success paths were exercised (~5-10% and ~90% of the
        # bodies), on this database.
        assert min(statuses[200], statuses[400]) >= EXAMPLES // 40, statuses
        # The server is still healthy afterwards.
        assert client.get("/readiness").status_code == 200
        ok = client.post("/responses", json={"model": "m", "input": "still fine"})
        assert ok.status_code == 200 and ok.json()["status"] == "completed"


# Each of these reached the database (PostgreSQL refused it: a 500) or the model client
# (agent-framework's ContentError: a 500 on both databases) before it was checked.
BAD_BODIES: list[tuple[dict[str, Any], str]] = [
    ({"input": [{"type": "item_reference", "id": "msg_\x00"}]}, "input[0].id"),
    ({"input": [{"type": "function_call_output", "call_id": "c\x00", "output": "x"}]}, "input[0].call_id"),
    (
        {"input": [{"type": "mcp_approval_response", "approval_request_id": "\x00", "approve": True}]},
        "input[0].approval_request_id",
    ),
    (
        {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "data:x"}]}]},
        "input[0].content[0].image_url",
    ),
    (
        {"input": [{"role": "user", "content": [{"type": "input_file", "file_data": "data:x"}]}]},
        "input[0].content[0].file_data",
    ),
    (
        {"input": [{"role": "user", "content": [{"type": "input_file", "file_url": "nowhere"}]}]},
        "input[0].content[0].file_url",
    ),
    (
        {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "data:a;b,AAAA"}]}]},
        "input[0].content[0].image_url",
    ),
    ({"input": [{"type": "message", "id": "m\x00", "role": "user", "content": "x"}]}, "input[0].id"),
]


def test_bad_inputs_are_400s(fuzz_server: ServerProcess) -> None:
    """NUL in an id, a reference or a cursor, and malformed data URLs: a 400 naming the field,
    on this database, never a 500."""
    with httpx.Client(base_url=fuzz_server.base_url, timeout=30) as client:
        for body, param in BAD_BODIES:
            r = client.post("/responses", content=encode({"model": "m", **body}))
            assert r.status_code == 400, (body, r.status_code, r.text[:300])
            assert_error_shape(r)
            assert r.json()["error"]["param"] == param, (body, r.json())
        created = client.post("/responses", json={"model": "m", "input": "x"}).json()["id"]
        for query in ("after=a%00b", "before=%00", "after=x%01"):
            r = client.get(f"/responses/{created}/input_items?{query}")
            assert r.status_code == 400, (query, r.status_code, r.text[:300])
            assert_error_shape(r)
        conv = client.post("/conversations", json={}).json()["id"]
        r = client.get(f"/conversations/{conv}/items?after=a%00b")
        assert r.status_code == 400, r.text[:300]
        r = client.get(f"/conversations/{conv}/items/msg%00x")
        assert r.status_code == 404, r.text[:300]
