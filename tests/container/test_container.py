"""The container image, built and run for real with podman.

Builds the image from ./Dockerfile on a locally made Debian bookworm base (build_base.sh), starts
it with its data on a named volume, serves a response to the official openai client, stops it with
SIGTERM (graceful: exit code 0, well inside the stop timeout), starts a new container on the same
volume and reads the earlier response back. Skipped only where podman is missing.

Networking: rootful podman's default bridge with `-p 127.0.0.1:<free port>:8088`. Where publishing
ports does not work, set DURABLE_CONTAINER_NETWORK=host: the container then shares the host's
network and listens on the free port itself (`-e PORT=<port>`).

Run alone with: pytest -m container -s tests/container   (-s shows the timings)
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.pg import drop_pg_database, new_pg_database
from tests.support.responses import wait_terminal
from tests.support.servers import free_port
from tests.support.tools import need_module

from .conftest import Podman, log

openai = need_module("openai", "pip install openai, in the test extra")

# One worker (`--dist loadgroup`) builds the images (session fixtures) and runs every container test.
pytestmark = [pytest.mark.container, pytest.mark.xdist_group("container"), pytest.mark.timeout(900)]

HOST_NETWORK = os.environ.get("DURABLE_CONTAINER_NETWORK") == "host"
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 30  # podman stop -t: SIGKILL after this many seconds
GRACEFUL_STOP_SECONDS = 15.0  # a graceful stop of an idle server is much faster than this


@dataclass
class Container:
    podman: Podman
    name: str
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, **headers: str) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=self.base_url,
            api_key="x",
            max_retries=0,
            timeout=60,
            default_headers=headers or None,
        )

    def logs(self) -> str:
        proc = self.podman.run("logs", self.name, check=False, quiet=True)
        return proc.stdout + proc.stderr

    def exec(self, *cmd: str) -> str:
        return self.podman.run("exec", self.name, *cmd, quiet=True).stdout

    def state(self, field: str) -> str:
        return self.podman.run(
            "inspect", "--format", "{{.State." + field + "}}", self.name, quiet=True
        ).stdout.strip()

    def wait_ready(self) -> float:
        start = time.monotonic()
        last: object = None
        while time.monotonic() - start < READY_TIMEOUT:
            if self.state("Running") != "true":
                raise AssertionError(f"container {self.name} exited early:\n{self.logs()[-6000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/readiness", timeout=2) as r:
                    if r.status == 200:
                        elapsed = time.monotonic() - start
                        log(f"{self.name} ready in {elapsed:.1f}s")
                        return elapsed
            except (urllib.error.URLError, OSError) as exc:
                last = exc
            time.sleep(0.25)
        raise AssertionError(f"{self.name} not ready after {READY_TIMEOUT}s ({last}):\n{self.logs()[-6000:]}")

    def stop(self) -> tuple[float, int]:
        """SIGTERM (the image's STOPSIGNAL), SIGKILL only after STOP_TIMEOUT. -> (seconds, exit code)."""
        start = time.monotonic()
        self.podman.run("stop", "-t", str(STOP_TIMEOUT), self.name, timeout=STOP_TIMEOUT + 30)
        elapsed = time.monotonic() - start
        code = int(self.state("ExitCode"))
        log(f"{self.name} stopped in {elapsed:.1f}s with exit code {code}")
        return elapsed, code


@contextlib.contextmanager
def running(
    podman: Podman, image: str, *options: str, name: str, host_network: bool = HOST_NETWORK
) -> Iterator[Container]:
    port = free_port()
    name = f"{name}-{os.getpid()}"
    podman.run("rm", "-f", "-v", name, check=False, quiet=True)
    net = ["--network", "host", "-e", f"PORT={port}"] if host_network else ["-p", f"127.0.0.1:{port}:8088"]
    # No systemd here to time the HEALTHCHECK: disable its timer (`podman healthcheck run` still works).
    podman.run("run", "-d", "--name", name, "--health-interval", "disable", *net, *options, image)
    container = Container(podman, name, port)
    try:
        container.wait_ready()
        yield container
    finally:
        tail = container.logs()[-3000:]
        podman.run("rm", "-f", "-v", "-t", "0", name, check=False, quiet=True)
        print(f"--- logs of {name} (tail) ---\n{tail}")


def test_serve_stop_and_restart_on_the_same_volume(podman: Podman, image: str, volume: str) -> None:
    t0 = time.monotonic()
    with running(podman, image, "-v", f"{volume}:/data", name="durable-first") as first:
        assert first.exec("id", "-u").strip() == "10001", "runs as the non-root user"
        health = podman.run("healthcheck", "run", first.name, check=False)
        assert health.returncode == 0, f"HEALTHCHECK failed: {health.stdout} {health.stderr}"

        client = first.client()
        t = time.monotonic()
        created = client.responses.create(input="hello world")
        log(f"POST /responses answered in {time.monotonic() - t:.2f}s: {created.output_text!r}")
        assert created.status == "completed"
        assert created.output_text

        events = [e.type for e in client.responses.create(input="stream me", stream=True)]
        assert events[0] == "response.created" and events[-1] == "response.completed", events

        assert "durable-responses.db" in first.exec("ls", "/data"), "embedded SQLite lives on the volume"

        elapsed, code = first.stop()
        assert code == 0, f"SIGTERM should end the server cleanly, got exit code {code}"
        assert elapsed < GRACEFUL_STOP_SECONDS, f"stop took {elapsed:.1f}s: SIGTERM was not handled"

    # A new container (read-only root filesystem, as in deploy/k8s) on the same volume.
    with running(
        podman, image, "-v", f"{volume}:/data", "--read-only", "--tmpfs", "/tmp", name="durable-second"
    ) as second:
        again = second.client().responses.retrieve(created.id)
        assert again.id == created.id
        assert again.status == "completed"
        assert again.output_text == created.output_text
        _, code = second.stop()
        assert code == 0
    log(f"serve/stop/restart test took {time.monotonic() - t0:.1f}s")


def test_custom_app_image(podman: Podman, custom_image: str, volume: str) -> None:
    """deploy/custom-app: FROM durable-responses + pip install + DURABLE_RESPONSES_APP."""
    with running(podman, custom_image, "-v", f"{volume}:/data", name="durable-custom") as server:
        assert server.exec("id", "-u").strip() == "10001"
        reply = server.client().responses.create(input="hello world")
        assert reply.status == "completed"
        assert "my_app heard: HELLO WORLD" in reply.output_text


def test_foundry_keeps_data_under_home(podman: Podman, image: str, volume: str) -> None:
    """Hosted on Foundry with no DATABASE_URL, the database lives under $HOME, the one path kept
    across compute recreation; a new container with the same $HOME (and a fresh /data) still
    has the earlier response."""
    home = "/home/session"
    options = ["-e", "FOUNDRY_HOSTING_ENVIRONMENT=test", "-e", f"HOME={home}", "-v", f"{volume}:{home}:U"]
    headers = {"x-agent-user-id": "alice"}
    with running(podman, image, *options, name="durable-foundry-1") as first:
        created = first.client(**headers).responses.create(input="remember me")
        assert created.status == "completed"
        listing = first.exec("sh", "-c", f"ls -a {home}/.durable-responses /data 2>&1; true")
        where = first.exec("sh", "-c", f"ls {home}/.durable-responses 2>/dev/null; true")
        assert "durable-responses.db" in where, f"the database is not under $HOME:\n{listing}"
        assert "durable-responses.db" not in first.exec("ls", "/data"), listing
        _, code = first.stop()
        assert code == 0
    with running(podman, image, *options, name="durable-foundry-2") as second:
        again = second.client(**headers).responses.retrieve(created.id)
        assert again.output_text == created.output_text
        with pytest.raises(openai.NotFoundError):
            second.client(**{"x-agent-user-id": "mallory"}).responses.retrieve(created.id)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database on the machine's PostgreSQL (reached with --network host); like
    every PostgreSQL fixture, it fails without PostgreSQL unless DURABLE_RESPONSES_SKIP_POSTGRES=1."""
    url = new_pg_database(migrated=False)
    try:
        yield url
    finally:
        drop_pg_database(url)


def test_postgres_migrate_is_a_step(podman: Podman, image: str, pg_url: str) -> None:
    """As in deploy/compose.yaml and deploy/k8s: `serve` refuses a schema that is behind, two
    concurrent `migrate` runs both succeed, then `serve` starts on the migrated database."""
    env = ["--network", "host", "-e", f"DATABASE_URL={pg_url}"]
    base = ["run", "--rm", "--health-interval", "disable", *env]

    refused = podman.run(*base, image, check=False, timeout=120)
    assert refused.returncode != 0, "serve must refuse an unmigrated PostgreSQL database"
    assert "migrate" in refused.stderr, refused.stderr

    t = time.monotonic()
    runs = [
        subprocess.Popen(
            ["podman", *base, image, "migrate"],
            env=podman.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=180) for run in runs]
    log(f"two concurrent migrate runs took {time.monotonic() - t:.1f}s")
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, f"migrate failed:\n{out}\n{err}"
    again = podman.run(*base, image, "migrate", timeout=120)
    assert "nothing applied" in again.stdout or "already" in again.stdout, again.stdout

    with running(
        podman, image, "-e", f"DATABASE_URL={pg_url}", name="durable-pg", host_network=True
    ) as server:
        reply = server.client().responses.create(input="hello postgres")
        assert reply.status == "completed"
        assert server.client().responses.retrieve(reply.id).output_text == reply.output_text
        _, code = server.stop()
        assert code == 0


def test_sigterm_lets_foreground_finish_and_leaves_background_to_recovery(
    podman: Podman, image: str, volume: str
) -> None:
    """SIGTERM (podman stop) mid-stream: the foreground response still completes and the server
    exits 0; a background response in flight is finished by the next container on the volume."""
    options = [
        "-v",
        f"{volume}:/data",
        "-e",
        "DURABLE_RESPONSES_APP=durable_responses.examples:countdown",
        "-e",
        "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS=20",
        "-e",
        "DURABLE_RESPONSES_LEASE_SECONDS=2",
    ]
    with running(podman, image, *options, name="durable-sigterm-1") as first:
        client = first.client()
        background = client.responses.create(input="40 delay=0.25", background=True)
        stream = client.responses.create(input="12 delay=0.25", stream=True)
        events = iter(stream)
        seen = [next(events).type]
        while "response.output_text.delta" not in seen and "response.output_item.added" not in seen:
            seen.append(next(events).type)

        stopper = subprocess.Popen(
            ["podman", "stop", "-t", str(STOP_TIMEOUT), first.name],
            env=podman.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        t = time.monotonic()
        seen += [e.type for e in events]
        assert seen[-1] == "response.completed", seen[-5:]
        stopper.wait(timeout=STOP_TIMEOUT + 30)
        elapsed = time.monotonic() - t
        code = int(first.state("ExitCode"))
        log(f"{first.name}: stopped mid-stream in {elapsed:.1f}s, exit code {code}")
        assert code == 0
        assert elapsed < GRACEFUL_STOP_SECONDS + 10

    with running(podman, image, *options, name="durable-sigterm-2") as second:
        client = second.client()
        start = time.monotonic()
        current = wait_terminal(client, background.id, timeout=90)
        log(f"background response recovered as {current.status} in {time.monotonic() - start:.1f}s")
        assert current.status == "completed"
        assert "tick 0" in current.output_text
