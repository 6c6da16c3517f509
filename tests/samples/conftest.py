"""Each test module has a fake model of its own (`fake`: the samples' clients talk to it, see
`model.py`).

test_hitl_samples.py's tests of one dialect run on one pytest-xdist worker (`--dist
loadgroup`, as `make test` runs): each dialect's shared servers (every sample on one server, by
model name) and the subprocess servers' fork server then start once, not once per worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from durable_responses.testing import FakeModel

HITL = "tests/samples/test_hitl_samples.py"


# Before pytest-xdist's own hook, which reads the `xdist_group` markers (tests/conftest.py).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(HITL + "::"):
            callspec = getattr(item, "callspec", None)
            dialect = (
                callspec.params.get("database_url", callspec.params.get("shared_servers"))
                if callspec
                else None
            )
            if dialect is not None:
                item.add_marker(pytest.mark.xdist_group(f"hitl-samples-{dialect}"))


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server
