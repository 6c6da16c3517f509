"""The distribution installs as `durable_responses` beside a project's own `server` and
`migrations` packages.

A wheel is built from a copy of the repository's packaging files (`pyproject.toml`, `setup.py`,
`server/`, `migrations/`) with this environment's setuptools, and installed (not editable,
`--no-deps --no-index`: offline) into a fresh virtual environment whose dependencies come from
the test environment's site-packages (a `.pth` line; the test environment's editable install
of this checkout is not activated there, so `durable_responses` can only come from the wheel).
A project with its own `server` and `migrations` packages then imports both, and the
installed command and `python -m durable_responses` run, `migrate` included (the Alembic
scripts ship inside the package).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ("pyproject.toml", "setup.py", "README.md")


def _run(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed; returns its directory."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    source.mkdir()
    for name in PACKAGING:
        shutil.copy(ROOT / name, source / name)
    for folder in ("server", "migrations"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = base / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "-q", "-w", str(wheels), str(source)],
        cwd=base,
    )  # fmt: skip
    (wheel,) = wheels.glob("durable_responses-*.whl")
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    _run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check",
         "-q", str(wheel)],
        cwd=base,
    )  # fmt: skip
    site = Path(
        _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=base).strip()
    )
    # The dependencies: the test environment's packages, after the new environment's own.
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return env_dir


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project with packages of its own named `server` and `migrations`."""
    for name in ("server", "migrations"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f'WHOSE = "the project\'s {name}"\n')
    (tmp_path / "server" / "app.py").write_text("from migrations import WHOSE\n")
    return tmp_path


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "DURABLE_RESPONSES_"))}
    env.pop("DATABASE_URL", None)
    return {**env, **extra}


def test_the_package_installs_beside_a_project_s_own_server_and_migrations(
    installed: Path, project: Path
) -> None:
    python = installed / "bin" / "python"
    check = textwrap.dedent(
        """
        import json, server, server.app, migrations
        import durable_responses, durable_responses.migrations, durable_responses.cli
        from durable_responses.store.ops.migrate import MIGRATIONS_PACKAGE
        print(json.dumps({
            "server": server.WHOSE, "migrations": migrations.WHOSE, "app": server.app.WHOSE,
            "package": durable_responses.__file__, "scripts": durable_responses.migrations.__file__,
            "scripts_package": MIGRATIONS_PACKAGE,
        }))
        """
    )
    import json

    seen = json.loads(_run([str(python), "-c", check], cwd=project, env=_clean_env()))
    assert seen["server"] == "the project's server"
    assert seen["migrations"] == "the project's migrations"
    assert seen["app"] == "the project's migrations"
    # From the wheel in the new environment, not from this checkout.
    for key in ("package", "scripts"):
        assert Path(seen[key]).is_relative_to(installed), (key, seen[key])
        assert not Path(seen[key]).is_relative_to(ROOT), (key, seen[key])
    assert seen["scripts_package"] == "durable_responses.migrations"
    scripts = Path(seen["scripts"]).parent
    assert (scripts / "env.py").is_file() and (scripts / "script.py.mako").is_file()
    assert sorted(p.name for p in (scripts / "versions").glob("*.py")) == sorted(
        p.name for p in (ROOT / "migrations" / "versions").glob("*.py")
    )


def test_the_installed_commands_run_and_migrate(installed: Path, project: Path) -> None:
    python = installed / "bin" / "python"
    for command in (
        [str(python), "-m", "durable_responses", "--help"],
        [str(installed / "bin" / "durable-responses"), "--help"],
    ):
        out = _run(command, cwd=project, env=_clean_env())
        assert "serve" in out and "migrate" in out, out
    # The Alembic scripts inside the installed package migrate a database, run from the project.
    url = f"sqlite:///{project / 'state.db'}"
    _run([str(python), "-m", "durable_responses", "migrate"], cwd=project, env=_clean_env(DATABASE_URL=url))
    import sqlite3

    with sqlite3.connect(project / "state.db") as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"responses", "events", "checkpoints", "alembic_version"} <= tables, tables
