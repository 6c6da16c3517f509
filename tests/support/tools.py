"""Outside programs a test needs (chromium, podman, pgbouncer): skipped, saying why, on a
developer's machine without them; a failure in CI (`CI=true`), which installs them, so a
missing tool can never hide a test there."""

from __future__ import annotations

import os
import shutil

import pytest


def need(program: str, install: str) -> str:
    """The path of `program`, or skip (fail in CI) saying how to install it."""
    path = shutil.which(program)
    if path is not None:
        return path
    message = f"{program} is not installed ({install})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI must run this test (.ci/run installs it)")
    pytest.skip(reason=message)
