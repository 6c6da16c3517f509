"""`durable-responses serve --app ...` with an app the host cannot serve (issue 36): one line on
stderr saying what, why and what to do, exit status 2, never a traceback. Run as the real command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import forkserver
from tests.support.servers import ROOT

CASES = {
    # app: words the one line must hold
    "tests.apps.unservable:raises": ["raised RuntimeError", "no model configured: set MODEL_URL"],
    "tests.apps.unservable:not_an_agent": ["returned int", "must return a Workflow"],
    "tests.apps.unservable:takes_arguments": ["must take no arguments"],
    "tests.apps.unservable:typed_dict_start": ["TypedDict Point", "dataclass or a pydantic model instead"],
    "tests.apps.unservable:lock_start": ["takes Lock", "cannot be built from JSON"],
    "tests.apps.unservable:nowhere": ["has no attribute 'nowhere'"],
    "tests.apps.broken_import:app": ["importing 'tests.apps.broken_import'", "raised KeyError"],
    "tests.apps.no_such_module:app": ["cannot import 'tests.apps.no_such_module'"],
    "nocolon": ["MODULE:ATTR"],
}


# The first case runs the real command (`python -m durable_responses`); the others run the
# same `durable_responses.cli.main` as forks of the suite's fork server (no interpreter start,
# ~4 s of CPU each), when it is on.
COLD = next(iter(CASES))


def _serve(app: str, tmp_path: Path) -> tuple[int, str]:
    """`serve --app app`: its exit status and its stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DURABLE_RESPONSES_APP", None)
    argv = ["serve", "--app", app, "--port", "8089", "--database-url", f"sqlite:///{tmp_path / 'db.sqlite'}"]
    log = tmp_path / "stderr.log"
    forked = (
        None
        if app == COLD
        else forkserver.fork({"argv": argv, "env": env, "cwd": str(tmp_path), "log": str(log)})
    )
    if forked is not None:
        code = forked.wait(120)
        assert code is not None
        return code, log.read_text()
    done = subprocess.run(
        [sys.executable, "-m", "durable_responses", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize("app", list(CASES))
def test_an_app_the_host_cannot_serve_is_one_line_and_exit_2(app: str, tmp_path: Path) -> None:
    returncode, stderr = _serve(app, tmp_path)
    assert returncode == 2, (returncode, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("durable-responses serve: "), lines
    for words in CASES[app]:
        assert words in lines[0], lines[0]
