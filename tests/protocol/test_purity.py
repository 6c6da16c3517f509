"""The protocol layer stays pure: stdlib (and orjson) imports only, no I/O or asyncio, a docstring on every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "protocol"
ALLOWED = {
    "__future__",
    "base64",  # (these three: the webhook signature, protocol/webhooks.py)
    "binascii",
    "hmac",
    "collections",
    "copy",
    "dataclasses",
    "hashlib",
    "json",
    "math",
    "orjson",  # a JSON encoder: no I/O, no state
    "re",
    "secrets",
    "time",
    "typing",
}
MODULES = sorted(PACKAGE.glob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_is_pure(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert ast.get_docstring(tree), f"{path.name} has no module docstring"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside the package
                continue
            roots = {(node.module or "").split(".")[0]}
        else:
            continue
        assert roots <= ALLOWED, f"{path.name} imports {roots - ALLOWED}"
    calls = {getattr(n.func, "id", None) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not calls & {"open", "print", "input", "exec", "eval"}, f"{path.name} does I/O or evaluates code"
