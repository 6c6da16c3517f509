"""The fake model the samples talk to: the environment their `OpenAIChatClient()` reads, and
that environment set in this process for a module's in-process servers (tests/samples/conftest.py
gives each test module its own `FakeModel`, the `fake` fixture)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from durable_responses.testing import FakeModel


def model_env(fake: FakeModel) -> dict[str, str]:
    """`OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_CHAT_MODEL` pointing at `fake`."""
    return {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "fake-key", "OPENAI_CHAT_MODEL": "fake"}


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
