"""Running the tests' Node scripts (tests/node): its packages are installed from its own
package-lock.json (`npm ci`, what `.ci/run` does) when missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


PACKAGES = ("openai", "playwright-core", "ai", "@ai-sdk/openai", "zod")


def ensure_packages() -> None:
    if all((NODE_DIR / "node_modules" / name).is_dir() for name in PACKAGES):
        return
    npm = shutil.which("npm")
    assert npm, "npm is needed (apt-get install nodejs npm)"
    subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, timeout=300)


def run(script: str, env: dict[str, str], timeout: float = 120) -> str:
    ensure_packages()
    node = shutil.which("node")
    assert node, "node is needed"
    proc = subprocess.run(
        [node, str(NODE_DIR / script)],
        cwd=NODE_DIR,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout
