"""A PostgreSQL server of this suite's own (never the machine's on 5432): TLS on with a
throwaway CA, roles for client-certificate and token (password) authentication, and a migrated
template database that each test copies.

`hba`: `certuser` must present a client certificate; `tokenuser` authenticates with a password
(the token); everyone else is trusted (the pooler tests are about pooling).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pgserver import OwnPostgres

from . import pgbouncer
from .certs import Certs, make_certs

ROOT = Path(__file__).resolve().parents[2]


def migrate(url: str) -> subprocess.CompletedProcess[str]:
    """`durable-responses migrate` of this checkout on `url`, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "durable_responses", "migrate", "--database-url", url],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


TEMPLATE = "dr_template"


@pytest.fixture(scope="session")
def own_pg() -> Iterator[tuple[OwnPostgres, Certs]]:
    base = Path(tempfile.mkdtemp(prefix="dr-pg-tls-"))
    certs = make_certs(base / "certs", client_user="certuser")
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        for p in (base, certs.dir, *certs.dir.iterdir()):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    pg = OwnPostgres(
        base=base,
        conf=[
            "ssl = on",
            f"ssl_cert_file = '{certs.server_cert}'",
            f"ssl_key_file = '{certs.server_key}'",
            f"ssl_ca_file = '{certs.ca}'",
            "password_encryption = 'scram-sha-256'",
        ],
        hba=[
            "local all all trust",
            "hostssl all certuser 127.0.0.1/32 cert",
            "host all certuser 127.0.0.1/32 reject",
            "host all tokenuser 127.0.0.1/32 scram-sha-256",
            "host all all 127.0.0.1/32 trust",
        ],
    )
    try:
        pg.start()
        pg.psql("CREATE ROLE certuser LOGIN SUPERUSER")
        pg.psql("CREATE ROLE tokenuser LOGIN SUPERUSER PASSWORD 'initial'")
        pg.psql(f'CREATE DATABASE "{TEMPLATE}"')
        migrate(pg.url(TEMPLATE)).check_returncode()
        yield pg, certs
    finally:
        pg.destroy()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg(own_pg: tuple[OwnPostgres, Certs]) -> OwnPostgres:
    return own_pg[0]


@pytest.fixture
def certs(own_pg: tuple[OwnPostgres, Certs]) -> Certs:
    return own_pg[1]


@pytest.fixture
def database(pg: OwnPostgres) -> Iterator[str]:
    """A fresh migrated database on the suite's server (its name)."""
    name = f"dr_{uuid.uuid4().hex[:10]}"
    pg.psql(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
    yield name
    pg.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def require_pgbouncer() -> None:
    if not pgbouncer.available():
        pytest.fail("pgbouncer is not installed (apt-get install pgbouncer; .ci/run installs it)")
