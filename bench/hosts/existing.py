"""The existing host: agent-framework-foundry-hosting's `ResponsesHostServer`, plain and resilient.

Installed into bench/.venv-existing (gitignored) with `python3 -m venv` and pip, at the versions
measured before (reused on later runs while the pins match), and started as
bench/hosts/existing_serve.py under that venv's python, on a free loopback port, its state
(`AGENTSERVER_STATE_ROOT`: task records, SSE logs, response store, checkpoints) in a fresh directory
per session. Two columns:
- plain: default options, plain foreground streams: its fastest configuration;
- resilient: `ResponsesServerOptions(resilient_background=True)`; requests add `background=true`
  (its resilience only covers background responses).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.config import BENCH, log
from bench.hosts.base import Host
from bench.hosts.process import ServedSession, ServerProc, free_port, serving

EXISTING_VENV = BENCH / ".venv-existing"
EXISTING_PINS = (
    "agent-framework-foundry-hosting==1.0.0b261022",
    "azure-ai-agentserver-responses==2.3.0",
    "agent-framework-core==1.23.0",
)
SERVE = Path(__file__).resolve().parent / "existing_serve.py"


def ensure_existing_venv() -> Path:
    """bench/.venv-existing with the existing host's pinned packages (reused when already there)."""
    py = EXISTING_VENV / "bin" / "python"
    stamp = EXISTING_VENV / ".bench-pins"
    wanted = "\n".join(EXISTING_PINS)
    if py.exists() and stamp.exists() and stamp.read_text() == wanted:
        return py
    log(f"installing the existing host into {EXISTING_VENV} ({', '.join(EXISTING_PINS)})")
    if not py.exists():
        subprocess.run(
            [shutil.which("python3") or sys.executable, "-m", "venv", str(EXISTING_VENV)], check=True
        )
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", *EXISTING_PINS], check=True)
    subprocess.run(
        [str(py), "-c", "import agent_framework_foundry_hosting, azure.ai.agentserver.responses"], check=True
    )
    stamp.write_text(wanted)
    return py


def existing_versions(py: Path) -> str:
    code = (
        "import importlib.metadata as m, sys;"
        "print(sys.version.split()[0], *(p + ' ' + m.version(p) for p in "
        "('agent-framework-foundry-hosting', 'azure-ai-agentserver-responses', 'agent-framework-core')), sep=', ')"
    )
    return subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


@dataclass
class ExistingHost(Host):
    # Its venv's python (set by `prepare`).
    python: Path = field(default_factory=Path, repr=False)

    def prepare(self, work: Path) -> None:
        super().prepare(work)
        self.python = ensure_existing_venv()

    @property
    def recovery_skip(self) -> str | None:
        if self.resilient:
            return None
        return "not durable: in-flight responses stay in_progress after kill -9"

    @contextmanager
    def session(self, app: str, name: str) -> Iterator[ServedSession]:
        state_root = self.work / name / "state"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["AGENTSERVER_STATE_ROOT"] = str(state_root)
        cmd = [str(self.python), str(SERVE), "--app", app, "--port", str(free_port())]
        if self.resilient:
            cmd.append("--resilient")
        srv = ServerProc(cmd, env=env, cwd=state_root, log_dir=self.work / "logs", name=f"existing-{app}")
        with serving(srv):
            # bench/hosts/existing_serve.py serving one workflow, state in its own directory.
            yield ServedSession(srv, self.body)

    def versions(self) -> dict[str, str]:
        return {"existing host": existing_versions(self.python)}


def existing_hosts() -> list[Host]:
    return [
        # Its fastest configuration: a plain foreground stream, nothing made durable on purpose.
        ExistingHost("existing-plain", "existing host, plain", "existing"),
        # Its durable path: resilient_background only covers background responses.
        ExistingHost(
            "existing-resilient",
            "existing host, resilient",
            "existing",
            body={"background": True},
            resilient=True,
        ),
    ]
