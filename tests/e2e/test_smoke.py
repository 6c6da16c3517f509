"""Smoke test: the openai client against a real server on both dialects."""

from __future__ import annotations

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
