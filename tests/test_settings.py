"""The one settings model: every variable declared once, documented in the README, validated
by name, read nowhere else."""

from __future__ import annotations

import ast
import pathlib

import pytest

import durable_responses
from durable_responses import cli
from durable_responses.settings import Settings, SettingsError, markdown_table, variables

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- settings:begin -->", "<!-- settings:end -->"


def test_the_readme_table_is_the_generated_one() -> None:
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme, "README.md lacks the settings table markers"
    table = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert table == markdown_table().strip(), (
        "README.md's settings table is stale: paste the output of `durable-responses settings`"
    )


def test_every_variable_is_declared_once() -> None:
    names = [v.name for v in variables()]
    assert len(names) == len(set(names)), names
    assert all(v.doc for v in variables())


def _numeric_variables() -> list[str]:
    from durable_responses.settings import SECTIONS

    return [
        f.alias
        for section in SECTIONS
        for f in section.model_fields.values()
        if f.alias and f.annotation in (int, float)
    ]


@pytest.mark.parametrize("name", [*_numeric_variables(), "DURABLE_RESPONSES_DELIVERY"])
def test_a_bad_value_is_refused_naming_its_variable(name: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({name: "not-a-number"})


def test_an_empty_value_means_the_default() -> None:
    s = Settings.from_env({"DURABLE_RESPONSES_LEASE_SECONDS": "", "PORT": ""})
    assert s.store.lease_seconds == 15 and s.http.port == 8088


def test_the_lease_is_one_value_owned_by_the_store(tmp_path: pathlib.Path) -> None:
    from durable_responses.runtime.apps.apps import HostedApp
    from durable_responses.runtime.host import Host
    from durable_responses.store import Store

    assert not [v for v in variables() if "LEASE" in v.name and v.section != "Store"]
    store = Store.open(f"sqlite:///{tmp_path / 'x.db'}", lease_seconds=6)
    host = Host(store, HostedApp.load(None))
    assert host.leases.interval == pytest.approx(2.0)


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "9000")
    monkeypatch.setenv("DURABLE_RESPONSES_DELIVERY", "durable")
    monkeypatch.setenv("DURABLE_RESPONSES_CHECKPOINT_TYPES", "a:B")
    args = cli._parser().parse_args(
        ["serve", "--port", "9100", "--delivery", "live", "--allow-checkpoint-type", "c:D"]
    )
    s = cli.settings_from(args)
    assert s.http.port == 9100
    assert s.runtime.delivery == "live"
    assert s.runtime.checkpoint_types == ("a:B", "c:D")
    monkeypatch.setenv("DURABLE_RESPONSES_LEASE_SECONDS", "nope")
    with pytest.raises(SystemExit, match="DURABLE_RESPONSES_LEASE_SECONDS"):
        cli.main(["serve"])


def test_the_settings_command_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["settings"])
    assert capsys.readouterr().out == markdown_table()


def test_no_module_reads_the_environment_but_the_settings() -> None:
    """Every variable is read by the section that declares it, when it is built."""
    allowed = {"envsettings.py", "store/settings.py"}
    root = pathlib.Path(durable_responses.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if rel in allowed or rel.startswith(("examples/", "testing/")):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, offenders
