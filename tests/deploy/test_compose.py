"""The compose deployment's files agree with each other and with the repository (Docker does not run
here, so ``docker compose config`` cannot): services, images, build stages, volumes, variables,
the instance's environment, the workspace's code server, and the files the Dockerfile copies."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from pipelines.lib import options
from tests.conftest import REPO

DEPLOY = REPO / "deploy"
DAGSTER_SERVICES = ("code_location", "daemon", "webserver")
VARIABLE = re.compile(r"\$\{([A-Z0-9_]+)(?::?[-?][^}]*)?\}")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text())


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")  # continuation lines joined


def stages(dockerfile: str) -> list[str]:
    return re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", dockerfile, flags=re.M | re.I)


def stage_text(dockerfile: str, stage: str) -> str:
    """The instructions of one build stage and of the stages it is built FROM (its parents first)."""
    blocks = re.split(r"^(?=FROM\s)", dockerfile, flags=re.M | re.I)
    by_name = {m.group(2): (m.group(1), b) for b in blocks if (m := re.match(r"FROM\s+(\S+)\s+AS\s+(\S+)", b, re.I))}
    parent, text = by_name[stage]
    return (stage_text(dockerfile, parent) if parent in by_name else "") + text


def split_volume(volume: str) -> tuple[str, str, str]:
    """(source, target, mode) of a short-syntax volume; the source may hold ``${VAR:?message}``."""
    mode = ""
    if volume.endswith((":ro", ":rw")):
        volume, mode = volume[:-3], volume[-2:]
    source, target = volume.rsplit(":", 1)
    return source, target, mode


def test_services_and_images(compose, dockerfile):
    services = compose["services"]
    assert set(services) == {"postgres", *DAGSTER_SERVICES}
    assert services["postgres"]["image"].startswith("postgres:15")
    for name in DAGSTER_SERVICES:
        build = services[name]["build"]
        assert (DEPLOY / build["context"]).resolve() == REPO
        assert (REPO / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
        assert build["target"] in stages(dockerfile)
        for dependency, condition in services[name]["depends_on"].items():
            assert dependency in services
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in services[dependency] or "HEALTHCHECK" in stage_text(
                    dockerfile, services[dependency]["build"]["target"])
    # one image per build target: the daemon and the webserver share theirs
    images = {(s["build"]["target"], s["image"]) for s in map(services.get, DAGSTER_SERVICES)}
    assert len({image for _, image in images}) == len(images) == 2


def test_volumes_declared_and_used(compose):
    declared = set(compose["volumes"])
    used = set()
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source, target, _ = split_volume(volume)
            assert target.startswith("/")
            if not source.startswith((".", "/", "$")):
                used.add(source)
            elif source.startswith("."):
                assert (DEPLOY / source).is_dir(), source
    assert used == declared
    # the storage of compute logs is shared, so the webserver shows what the runs in the code location wrote
    storage = {split_volume(v)[0] for name in DAGSTER_SERVICES for v in compose["services"][name]["volumes"]}
    assert "dagster_storage" in storage


def test_every_variable_documented(compose):
    text = (DEPLOY / "docker-compose.yaml").read_text()
    example = (DEPLOY / ".env.example").read_text()
    guide = (REPO / "docs" / "deploy.md").read_text()
    variables = set(VARIABLE.findall(text))
    assert {"DAGSTER_PG_PASSWORD", "CACHEMETER_LOGS_DIR", "CACHEMETER_PARTITIONS_START"} <= variables
    for name in variables:
        assert re.search(rf"^#?\s*{name}=", example, flags=re.M), f"{name} missing in deploy/.env.example"
        assert name in guide, f"{name} missing in docs/deploy.md"
    for required in re.findall(r"\$\{([A-Z0-9_]+):\?", text):  # compose refuses to start without them
        assert re.search(rf"^{required}=\S", example, flags=re.M), f"{required} needs a value in .env.example"


def test_instance_environment_consistent(compose):
    instance = (DEPLOY / "dagster.yaml").read_text()
    needed = set(re.findall(r"\{env:\s*([A-Z0-9_]+)\}", instance))
    assert needed == {"DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_HOST", "DAGSTER_PG_DB", "DAGSTER_PG_PORT"}
    services = compose["services"]
    for name in DAGSTER_SERVICES:  # run workers in the code location open the instance too
        assert needed <= set(services[name]["environment"]), name
        environment = services[name]["environment"]
        assert environment["DAGSTER_PG_HOST"] == "postgres" and environment["DAGSTER_PG_PORT"] == "5432"
    database = services["postgres"]["environment"]
    for server_side, client_side in {"POSTGRES_USER": "DAGSTER_PG_USER", "POSTGRES_PASSWORD": "DAGSTER_PG_PASSWORD",
                                     "POSTGRES_DB": "DAGSTER_PG_DB"}.items():
        assert {services[name]["environment"][client_side] for name in DAGSTER_SERVICES} == {database[server_side]}


def test_instance_and_workspaces_validate(monkeypatch, tmp_path, compose, dockerfile):
    from dagster._core.instance.config import dagster_instance_config
    from dagster._core.workspace.load import location_origins_from_yaml_paths

    for name in ("DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_HOST", "DAGSTER_PG_DB"):
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("DAGSTER_PG_PORT", "5432")
    config, _ = dagster_instance_config(str(DEPLOY))  # raises on any key or value Dagster does not accept
    assert config["storage"]["postgres"]["postgres_db"]["scheme"] == "postgresql+psycopg2"
    assert config["run_retries"]["enabled"] and config["concurrency"]["pools"]["default_limit"] == 1

    [grpc] = location_origins_from_yaml_paths([str(DEPLOY / "workspace.yaml")])
    assert grpc.host == "code_location" and grpc.host in compose["services"]
    code_server = stage_text(dockerfile, "code_location")
    assert f'"--port", "{grpc.port}"' in code_server and f'"{grpc.location_name}"' in code_server
    assert f"EXPOSE {grpc.port}" in code_server
    [local] = location_origins_from_yaml_paths([str(REPO / "workspace.yaml")])
    assert local.location_name == grpc.location_name  # runs keep their location name from laptop to server
    assert local.loadable_target_origin.module_name == "pipelines.definitions"
    assert '"--module-name", "pipelines.definitions"' in code_server

    # the webserver and the daemon read the workspace file where the image puts it
    dagster_stage = stage_text(dockerfile, "dagster")
    [copied_to] = re.findall(r"COPY deploy/workspace.yaml (\S+)", dagster_stage)
    assert f'"--workspace", "{copied_to}"' in dagster_stage
    assert compose["services"]["daemon"]["command"] == ["dagster-daemon", "run", "--workspace", copied_to]
    [published] = compose["services"]["webserver"]["ports"]
    assert published.endswith(":3000") and '"--port", "3000"' in dagster_stage


def test_code_location_settings(compose):
    code_location = compose["services"]["code_location"]
    environment = code_location["environment"]
    volumes = {split_volume(v)[1]: split_volume(v) for v in code_location["volumes"]}
    for name in ("CACHEMETER_DB", "CACHEMETER_LOGS"):  # absolute, inside a mounted volume
        path = Path(environment[name])
        assert path.is_absolute() and any(path.is_relative_to(target) for target in volumes), name
    assert "demo" not in environment["CACHEMETER_LOGS"] and volumes["/data/logs"][2] == "ro"
    assert VARIABLE.match(volumes["/data/logs"][0]).group(1) == "CACHEMETER_LOGS_DIR"  # no default: must be set
    # every setting named here is one the code reads: declared in pipelines/lib/options.py
    declared = {option.env for option in options.OPTIONS}
    example = (DEPLOY / ".env.example").read_text()
    for name in set(environment) | set(re.findall(r"(CACHEMETER_[A-Z_]+)=", example)):
        if name.startswith("CACHEMETER_") and name != "CACHEMETER_LOGS_DIR":  # the host folder, for compose only
            assert name in declared, f"{name} is not a declared setting (pipelines/lib/options.py)"


def test_dockerfile_copies_existing_files(dockerfile):
    ignored = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert ".venv" in ignored and "deploy/.env" in ignored  # no virtualenv or secrets in the build context
    for sources in re.findall(r"^COPY\s+(?!--)(.+)\s+\S+$", dockerfile, flags=re.M):
        for source in sources.split():
            assert (REPO / source).exists(), f"Dockerfile copies {source}, which is not in the repository"
            assert not [p for p in ignored if fnmatch.fnmatch(source, p)], f"{source} is left out by .dockerignore"
    assert "COPY deploy/dagster.yaml /opt/dagster/dagster_home/dagster.yaml" in dockerfile
    assert "DAGSTER_HOME=/opt/dagster/dagster_home" in dockerfile
    assert re.search(r"^RUN pip install \. ", dockerfile, flags=re.M)  # the project itself, with its pins
    python = re.search(r"^FROM python:(\d+)\.(\d+)", dockerfile, flags=re.M).groups()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert tuple(map(int, python)) >= tuple(map(int, re.search(r">=(\d+)\.(\d+)", project["requires-python"]).groups()))


def test_dependencies_pinned():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    assert "dagster-postgres==0.29.27" in requirements
    assert [r for r in requirements if not re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][A-Za-z0-9.]*", r)] == []
