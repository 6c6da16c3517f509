"""Guards the names `durable_responses` exports (like httpx's test of its public API)."""

import durable_responses

EXPECTED = {
    "Host",
    "Delivery",
    "RuntimeSettings",
    "Service",
    "SettingsError",
    "StartupError",
    "StoreSettings",
    "build",
    "build_app",
    "prepare",
    "HostedApp",
    "HttpSettings",
    "RequestContext",
    "Settings",
    "SqlCheckpointStorage",
    "Store",
    "__version__",
    "create_app",
    "request_context",
    "journaled",
    "not_safe_to_rerun",
    "tool_idempotency_key",
}


def test_public_names() -> None:
    assert set(durable_responses.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(durable_responses, name), name


def test_layers_point_down() -> None:
    """protocol imports nothing of ours; store never imports runtime/http; runtime never http.
    A relative import is resolved from its module's own package, at any depth of subpackage."""
    import ast
    import pathlib

    root = pathlib.Path(durable_responses.__file__).parent
    forbidden = {
        "protocol": ("store", "runtime", "http", "agent_framework"),
        "store": ("runtime", "http", "agent_framework"),
        "runtime": ("http",),
        "http": ("sqlalchemy", "store"),
    }
    checked = 0
    for layer, bad in forbidden.items():
        for path in (root / layer).rglob("*.py"):
            package = ["durable_responses", *path.relative_to(root).parent.parts]
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names: list[str] = []
                if isinstance(node, ast.ImportFrom):
                    base = package[: len(package) - node.level + 1] if node.level else []
                    names = [".".join([*base, *([node.module] if node.module else [])])]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                for name in names:
                    checked += 1
                    for b in bad:
                        assert not (
                            name.startswith(f"durable_responses.{b}.")
                            or name == f"durable_responses.{b}"
                            or name == b
                            or name.startswith(f"{b}.")
                        ), f"{path}: imports {name}"
    assert checked > 100


def test_no_module_imports_another_s_private_name() -> None:
    """A private name (`_x`) is its module's own: another module importing it reaches into it.
    (Private modules such as `store/db/_engine.py` are fine: what they export has public names.)"""
    import ast
    import pathlib

    root = pathlib.Path(durable_responses.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                package = path.parents[node.level - 1].joinpath(*(node.module or "").split("."))
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    a_module = (package / f"{alias.name}.py").exists() or (package / alias.name).is_dir()
                    if private and not a_module:
                        found.append(f"{path.relative_to(root)}: from {node.module} import {alias.name}")
    assert not found, found
