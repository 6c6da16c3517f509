"""Fixtures for the container tests: podman settings, the local base image, the built image.

Nothing global is changed: podman reads tests/container/containers.conf through CONTAINERS_CONF
(a copy with rlimits lowered to this machine's hard limits when those are lower).
The base image is made locally by build_base.sh (debootstrap + podman import): no registry is
needed, and the image's Python is Debian bookworm's python3 (3.11), never a download.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.tools import need

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BASE_IMAGE = os.environ.get("DURABLE_BASE_IMAGE", "localhost/durable-base:bookworm")
IMAGE = "localhost/durable-responses:test"
CUSTOM_IMAGE = "localhost/durable-responses-custom-app:test"
# This machine's egress goes through a TLS-inspecting proxy whose CA is in the host's bundle; pip
# in the build must trust it too. Mounted for the build only (never copied into a layer).
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if shutil.which("podman") is not None:
        return
    if os.environ.get("DURABLE_RESPONSES_REQUIRE_CONTAINER") == "1":
        raise pytest.UsageError("podman is required here (DURABLE_RESPONSES_REQUIRE_CONTAINER=1) but missing")
    skip = pytest.mark.skip(reason="podman is not installed (apt-get install podman runc debootstrap)")
    for item in items:
        if item.get_closest_marker("container") is not None:
            item.add_marker(skip)


def log(message: str) -> None:
    print(f"[container] {message}", flush=True)


class Podman:
    """Runs podman with this test's settings; every call is logged with its duration."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(
        self, *args: str, check: bool = True, timeout: float = 120, quiet: bool = False
    ) -> subprocess.CompletedProcess[str]:
        start = time.monotonic()
        proc = subprocess.run(
            ["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if not quiet:
            log(f"podman {' '.join(args[:2])}... -> {proc.returncode} in {time.monotonic() - start:.1f}s")
        if check and proc.returncode != 0:
            raise AssertionError(
                f"podman {' '.join(args)} failed ({proc.returncode}):\n"
                f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
            )
        return proc


def containers_conf(tmp: Path) -> Path:
    """The shipped containers.conf, with rlimits no higher than this process's hard limits."""
    text = (HERE / "containers.conf").read_text()
    limits = {"nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC}

    def clamp(match: re.Match[str]) -> str:
        name, soft, hard = match.group(1), int(match.group(2)), int(match.group(3))
        host_hard = resource.getrlimit(limits[name])[1]
        if host_hard != resource.RLIM_INFINITY:
            # Equal to the hard limit is refused here too (no CAP_SYS_RESOURCE): stay below it.
            cap = max(1024, host_hard // 2)
            soft, hard = min(soft, cap), min(hard, cap)
        return f'"{name}={soft}:{hard}"'

    text = re.sub(r'"(nofile|nproc)=(\d+):(\d+)"', clamp, text)
    path = tmp / "containers.conf"
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Podman:
    need("podman", "apt-get install podman runc debootstrap")
    env = dict(os.environ)
    env["CONTAINERS_CONF"] = str(containers_conf(tmp_path_factory.mktemp("podman")))
    return Podman(env)


@pytest.fixture(scope="session")
def base_image(podman: Podman) -> str:
    start = time.monotonic()
    if podman.run("image", "exists", BASE_IMAGE, check=False, quiet=True).returncode == 0:
        log(f"base image {BASE_IMAGE} cached")
        return BASE_IMAGE
    proc = subprocess.run(
        ["bash", str(HERE / "build_base.sh")],
        env={**podman.env, "BASE_IMAGE_TAG": BASE_IMAGE},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"build_base.sh failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    log(f"base image {BASE_IMAGE} built in {time.monotonic() - start:.1f}s")
    return BASE_IMAGE


def build(podman: Podman, context: Path, tag: str, *build_args: str) -> None:
    args = ["build", "--pull=never", "--format", "docker", "--layers", "-t", tag]
    for build_arg in build_args:
        args += ["--build-arg", build_arg]
    if HOST_CA_BUNDLE.is_file():
        args += ["-v", f"{HOST_CA_BUNDLE}:/etc/ssl/certs/ca-certificates.crt:ro"]
    start = time.monotonic()
    podman.run(*args, str(context), timeout=900)
    size = podman.run("image", "inspect", "--format", "{{.Size}}", tag, quiet=True).stdout.strip()
    log(f"built {tag} in {time.monotonic() - start:.1f}s ({int(size) / 1e6:.0f} MB)")


@pytest.fixture(scope="session")
def image(podman: Podman, base_image: str) -> str:
    # DURABLE_CONTAINER_CONTEXT builds another tree (say a clone of what is committed).
    context = Path(os.environ.get("DURABLE_CONTAINER_CONTEXT", ROOT))
    build(podman, context, IMAGE, f"BASE_IMAGE={base_image}")
    return IMAGE


@pytest.fixture(scope="session")
def custom_image(podman: Podman, image: str) -> str:
    build(podman, ROOT / "deploy" / "custom-app", CUSTOM_IMAGE, f"DURABLE_RESPONSES_IMAGE={image}")
    return CUSTOM_IMAGE


@pytest.fixture
def volume(podman: Podman) -> Iterator[str]:
    name = f"durable-test-{os.getpid()}-{time.monotonic_ns()}"
    podman.run("volume", "create", name, quiet=True)
    yield name
    podman.run("volume", "rm", "-f", name, check=False, quiet=True)
