"""A create body is decoded once (orjson) where that reads it as `json` does, and through `json`
where it would not: the same document either way, and the same 400s."""

from __future__ import annotations

import json

import pytest

from durable_responses.http.creating import decode_json
from durable_responses.protocol import ProtocolError

BODIES = [
    b'{"input": "hi", "temperature": 0.5, "n": 1, "f": 1.0, "z": -0.0, "e": 1e5}',
    b'{"input": "\\ud83d\\ude00 \\u00e9 \xc3\xa9", "a": [true, false, null, {}]}',
    b'{"a": 1, "a": 2}',
    b' \n{"a": 1}\t',
    b'{"big": 123456789012345678901234567890, "neg": -98765432109876543210}',
    b'{"u64": 18446744073709551615, "i64": -9223372036854775808}',
    b'{"t": NaN, "i": Infinity, "huge": 1e400}',
    b'\xef\xbb\xbf{"bom": 1}',
    '{"s": "text \u00e9"}'.encode(),
]


@pytest.mark.parametrize("raw", BODIES)
def test_decoded_as_json_decodes_it(raw: bytes) -> None:
    assert repr(decode_json(raw)) == repr(json.loads(raw))
    assert repr(decode_json(raw.decode("utf-8-sig"))) == repr(json.loads(raw.decode("utf-8-sig")))


@pytest.mark.parametrize(
    "raw", [b'{"a": "\\ud800"}', b'{"a": "x\\udfff"}', b'{"a": ', b"[1,]", b'{"a": 1}}', b"", b"nul"]
)
def test_refused_as_before(raw: bytes) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_json(raw)
    assert caught.value.status == 400 and caught.value.code == "invalid_json"


def test_too_deep_is_refused() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_json(b"[" * 200 + b"]" * 200)
    assert caught.value.code == "invalid_json" and "levels deep" in str(caught.value)
