"""A throwaway certificate authority made with `openssl`: a server certificate for `localhost`
(DNS name only, so connecting to 127.0.0.1 is a host name mismatch), a client certificate, and
a second, unrelated CA (the wrong one)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Certs:
    dir: Path
    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _ca(d: Path, name: str) -> None:
    _run(
        "req",
        "-x509",
        *_KEY,
        "-days",
        "2",
        "-subj",
        f"/CN={name}",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.crt",
        cwd=d,
    )


def _signed(d: Path, name: str, cn: str, ca: str, ext: str | None) -> None:
    _run("req", *_KEY, "-subj", f"/CN={cn}", "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    args = [
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        f"{ca}.crt",
        "-CAkey",
        f"{ca}.key",
        "-CAcreateserial",
    ]
    args += ["-days", "2", "-out", f"{name}.crt"]
    if ext:
        (d / f"{name}.ext").write_text(ext + "\n")
        args += ["-extfile", f"{name}.ext"]
    _run(*args, cwd=d)


def make_certs(d: Path, *, client_user: str) -> Certs:
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "other-ca")
    _signed(d, "server", "localhost", "ca", "subjectAltName=DNS:localhost")
    _signed(d, "client", client_user, "ca", None)
    for key in d.glob("*.key"):
        key.chmod(0o600)
    return Certs(
        dir=d,
        ca=d / "ca.crt",
        other_ca=d / "other-ca.crt",
        server_cert=d / "server.crt",
        server_key=d / "server.key",
        client_cert=d / "client.crt",
        client_key=d / "client.key",
    )
