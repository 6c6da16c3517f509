"""The fake model the samples talk to: the environment their `OpenAIChatClient()` reads, and
that environment set in this process for a module's in-process servers (tests/samples/conftest.py
gives each test module its own `FakeModel`, the `fake` fixture); and the clients the tests talk
to the servers with, one of each per server (making an openai client costs ~20-70 ms of CPU:
its TLS context)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import openai

from durable_responses.testing import FakeModel

_OPENAI: dict[str, openai.OpenAI] = {}
_HTTP: dict[str, httpx.Client] = {}


def model_env(fake: FakeModel) -> dict[str, str]:
    """`OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_CHAT_MODEL` pointing at `fake` (and
    `OPENAI_CHAT_COMPLETION_MODEL`, the model `OpenAIChatCompletionClient()` reads)."""
    return {
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "fake-key",
        "OPENAI_CHAT_MODEL": "fake",
        "OPENAI_CHAT_COMPLETION_MODEL": "fake",
    }


@contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    """`values` in `os.environ` for the block; what was there before is put back after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def openai_client(base_url: str) -> openai.OpenAI:
    """The openai client of the server at `base_url` (its `/v1`), made once."""
    if base_url not in _OPENAI:
        _OPENAI[base_url] = openai.OpenAI(base_url=base_url + "/v1", api_key="x", max_retries=0, timeout=120)
    return _OPENAI[base_url]


def http() -> httpx.Client:
    """One httpx client for the tests' plain requests (replays), made once."""
    if "" not in _HTTP:
        _HTTP[""] = httpx.Client(timeout=120)
    return _HTTP[""]


def close_clients() -> None:
    """Close every client made here (a later call makes new ones)."""
    for c in [*_OPENAI.values(), *_HTTP.values()]:
        c.close()
    _OPENAI.clear()
    _HTTP.clear()
