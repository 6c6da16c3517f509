"""The tests `make test` runs on the newest supported agent-framework only (`once`,
tests/conftest.py `ONCE`): each entry names a module or folder that exists, and none of their
modules drives agent-framework itself (imports it, its OpenAI clients or the fake model, or hosts
the agent apps of tests/agents, tests/journal or tests/samples), but for the ones that cover both
releases by themselves. A test that does belongs in both passes: take it out of `ONCE`."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ONCE, release_once

ROOT = Path(__file__).resolve().parent.parent
# Entries that run agent-framework on purpose: each covers the releases in its own way (ONCE's reason).
COVERS_BOTH = {"tests/agents/test_releases.py", "tests/container/"}
FRAMEWORK_MODULES = ("agent_framework", "durable_responses.testing")
AGENT_APPS = ("tests.agents", "tests.journal", "tests.samples")


def _once_modules() -> list[Path]:
    return sorted(
        p
        for p in (ROOT / "tests").rglob("*.py")
        if release_once(p.relative_to(ROOT).as_posix())
        and not any(p.relative_to(ROOT).as_posix().startswith(c) for c in COVERS_BOTH)
    )


def _drives_the_framework(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.startswith(AGENT_APPS):
                found.append(f"hosts {node.value!r}")
        found += [f"imports {n}" for n in names if n.startswith(FRAMEWORK_MODULES + AGENT_APPS)]
    return found


def test_every_entry_names_what_exists() -> None:
    for entry in ONCE:
        assert (ROOT / entry).exists(), f"ONCE names {entry}, which is gone"
    assert set(COVERS_BOTH) <= set(ONCE)


def test_no_module_run_once_drives_the_framework() -> None:
    modules = _once_modules()
    assert len(modules) > 30, modules  # the selection is what it says
    found = {m.relative_to(ROOT).as_posix(): _drives_the_framework(m) for m in modules}
    assert {m: f for m, f in found.items() if f} == {}


def test_the_check_sees_a_module_that_does(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text(
        "from agent_framework import Agent\n"
        "from durable_responses.testing import FakeModel\n"
        "APP = 'tests.agents.apps:magentic'\n"
    )
    assert _drives_the_framework(module) == [
        "imports agent_framework",
        "imports durable_responses.testing",
        "hosts 'tests.agents.apps:magentic'",
    ]
