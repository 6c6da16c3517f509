"""`make test` runs pytest-xdist with `--dist loadgroup`: the tests of one `xdist_group` (the
container tests, which share one image build; the CPU-bound modules, tests/conftest.py) run on
one worker. pytest-xdist groups silently or not at all (some pytest releases break it without
an error), so this runs a small suite of its own on two workers and looks where each test ran."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SUITE = """
import os, pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        if "grouped" in item.name:
            item.add_marker(pytest.mark.xdist_group("one"))
"""

TESTS = """
import os, pathlib, pytest

@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    pathlib.Path(os.environ["WHERE"], f"grouped-{i}").write_text(os.environ["PYTEST_XDIST_WORKER"])

@pytest.mark.parametrize("i", range(8))
def test_free(i):
    pass
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(SUITE)
    (tmp_path / "test_groups.py").write_text(TESTS)
    where = tmp_path / "where"
    where.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"],
        cwd=tmp_path,
        env={**os.environ, "WHERE": str(where)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {p.name: p.read_text() for p in where.iterdir()}
    assert len(workers) == 8, workers
    assert len(set(workers.values())) == 1, f"the group ran on several workers: {workers}"
