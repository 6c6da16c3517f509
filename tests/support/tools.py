"""Outside programs and optional modules a test needs (chromium, podman, pgbouncer, hadolint,
the schema validators): skipped, saying why, on a developer's machine without them; a failure
in CI (`CI=true`), which installs them, so a missing tool or a failed install can never hide a
test there."""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import NoReturn

import pytest


def missing(message: str) -> NoReturn:
    """Skip saying what is missing and how to install it; fail in CI."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI must run this test (.ci/run installs it)")
    pytest.skip(reason=message)


def need_module(name: str, install: str) -> ModuleType:
    """The module `name` imported, or skip (fail in CI) saying how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"{name} cannot be imported ({exc}; {install})")


def need(program: str, install: str) -> str:
    """The path of `program`, or skip (fail in CI) saying how to install it."""
    path = shutil.which(program)
    if path is not None:
        return path
    missing(f"{program} is not installed ({install})")
