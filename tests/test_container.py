"""What a user of the image and of docker compose relies on, read from the Dockerfile and the compose file."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import make_url

from kernelgen.settings import Settings
from tests.server.live import serve

ROOT = Path(__file__).resolve().parent.parent


def instructions() -> list[tuple[str, str]]:
    """Return the Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined."""
    result, pending = [], ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue  # Docker drops comment lines, also inside a continued instruction
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, arguments = pending.strip().partition(" ")
        result.append((keyword.upper(), arguments.strip()))
        pending = ""
    return result


def arguments(keyword: str) -> list[str]:
    """Return the arguments of every instruction with this keyword, in order."""
    return [args for kw, args in instructions() if kw == keyword]


def image_env() -> dict[str, str]:
    """Return the variables the image's ENV instructions set (the key=value form)."""
    env: dict[str, str] = {}
    for args in arguments("ENV"):
        for word in shlex.split(args):
            name, _, value = word.partition("=")
            env[name] = value
    return env


def image_user() -> str:
    """Return the user the image's processes run as: the last USER."""
    users = arguments("USER")
    assert users, "the Dockerfile sets no USER, so everything runs as root"
    return users[-1].split(":")[0]


def healthcheck_argv() -> list[str]:
    """Return the HEALTHCHECK's command, which must be in exec form (no shell in the way)."""
    (check,) = arguments("HEALTHCHECK")
    _, _, command = check.partition("CMD ")
    return json.loads(command)


def compose() -> dict:
    """Return the parsed docker-compose.yml."""
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def interpolated(value: str) -> str:
    """Replace compose's ${VAR...} references by VAR, as the container sees their names, not their values."""
    return re.sub(r"\$\{(\w+)[^}]*\}", r"\1", value)


def test_the_image_runs_as_a_user_it_creates_that_is_not_root() -> None:
    user = image_user()
    assert user not in ("root", "0")
    assert any(re.search(rf"useradd\b.*\b{re.escape(user)}\b", args) for args in arguments("RUN"))


def test_data_is_a_volume_the_user_owns_and_holds_the_database_jobs_and_outputs(monkeypatch) -> None:
    user = image_user()
    steps = instructions()
    volume = next(i for i, (kw, args) in enumerate(steps) if kw == "VOLUME" and "/data" in args)
    # Docker discards what a later step changes under a declared volume, so the chown must come before it.
    chown = [i for i, (kw, args) in enumerate(steps)
             if kw == "RUN" and re.search(rf"chown\s+(-R\s+)?{user}(:{user})?\s+/data\b", args)]
    assert chown and chown[0] < volume
    assert arguments("WORKDIR")[-1] == "/data"  # `kernelgen run` writes kernelgen_out/ under it
    for name, value in image_env().items():
        monkeypatch.setenv(name, value)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    database = make_url(settings.database_url).database
    assert database is not None
    for path in (Path(database), settings.work_dir, settings.artifact_root):
        assert path.is_relative_to("/data"), path


def test_the_compiler_and_bubblewrap_are_installed_and_stay() -> None:
    runs = " ".join(arguments("RUN"))
    installs = " ".join(re.findall(r"apt-get install ([^&;]+)", runs)).split()
    # gcc builds Triton's launcher at run time and needs libc6-dev's headers; bwrap is the sandbox.
    assert {"gcc", "libc6-dev", "bubblewrap"} <= set(installs)
    assert not re.search(r"apt-get (purge|remove|autoremove)", runs)


def test_the_entrypoint_is_the_projects_cli() -> None:
    (entrypoint,) = arguments("ENTRYPOINT")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert json.loads(entrypoint) == ["kernelgen"] and "kernelgen" in scripts


def test_every_package_the_project_ships_is_copied_and_not_ignored() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    copied = {args.split()[0] for args in arguments("COPY")}
    packages = {pattern.rstrip("*") for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert packages <= copied, packages - copied
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for source in copied:
        assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), source
    assert ".env" in ignored  # the compose secrets live there


def test_the_installed_project_carries_every_file_its_packages_hold(tmp_path: Path) -> None:
    # The image installs with `pip install .`, not in editable mode: a data file that package-data misses is
    # absent there (a missing catalogue rejects every job) while every test on the checkout still passes.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [pattern.rstrip("*") for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    source = tmp_path / "src"  # a copy: building in the checkout would leave build/ there
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in packages:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(tmp_path / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("kernelgen-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    held = {path.relative_to(source).as_posix() for package in packages for path in (source / package).rglob("*")
            if path.is_file() and path.name != "README.md"}  # a folder's README is for readers of the source
    assert held <= shipped, sorted(held - shipped)


def pins() -> dict[str, str]:
    """Return the Dockerfile's torch and Triton versions (its ARG defaults)."""
    defaults = dict(args.split("=", 1) for args in arguments("ARG") if "=" in args)
    return {"torch": defaults["TORCH_VERSION"], "triton": defaults["TRITON_VERSION"]}


def test_torch_and_triton_are_pinned_to_the_measured_pair_within_the_projects_ranges() -> None:
    from packaging.requirements import Requirement

    declared = {Requirement(r).name: Requirement(r).specifier
                for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    for name, version in pins().items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} is not pinned: {version}"
        assert version in declared[name], (name, version, declared[name])
    runs = " ".join(arguments("RUN"))
    assert '"torch==$TORCH_VERSION"' in runs and '"triton==$TRITON_VERSION"' in runs
    # The pair the GPU results were measured with, as docs/results.md names it.
    measured = re.findall(r"torch (\d+\.\d+\.\d+)\+cu\d+,? (?:and )?[Tt]riton (\d+\.\d+\.\d+)",
                          (ROOT / "docs" / "results.md").read_text())
    assert (pins()["torch"], pins()["triton"]) in measured, sorted(set(measured))


def sandbox_options(text: str) -> set[str]:
    """Return the --security-opt values of a docker command line."""
    return set(re.findall(r"--security-opt[\s=]+([\w.=-]+)", text))


BUBBLEWRAP_NEEDS = {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"}


def docker_runs() -> list[str]:
    """Return every `docker run` command of docs/service.md, continuation lines joined."""
    text = (ROOT / "docs" / "service.md").read_text().replace("\\\n", " ")
    return [line for line in text.splitlines() if line.strip().startswith("docker run")]


def test_every_docker_run_example_gives_bubblewrap_what_it_needs() -> None:
    runs = docker_runs()
    assert len(runs) >= 3, runs  # a job on a GPU, a job on the CPU, the service
    for run in runs:
        assert BUBBLEWRAP_NEEDS <= sandbox_options(run), run
        assert "-v kernelgen-data:/data" in run, run
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert BUBBLEWRAP_NEEDS <= sandbox_options(dockerfile)


def test_the_healthcheck_targets_a_route_the_app_serves_without_a_token(tmp_path: Path) -> None:
    from server.app import create_app
    from server.routes import PUBLIC_ROUTERS

    found = re.search(r"http://127\.0\.0\.1:[^/]+(/[\w/.-]*)", " ".join(healthcheck_argv()))
    assert found
    app = create_app(Settings(_env_file=None, api_tokens=["alice:secret"],  # type: ignore[call-arg]
                              database_url=f"sqlite:///{tmp_path / 'kg.db'}"))  # not the user's own database
    assert "get" in app.openapi()["paths"][found.group(1)]
    # Included without the token dependency (the live check below shows it answers without one).
    assert any(getattr(route, "path", None) == found.group(1) for router in PUBLIC_ROUTERS for route in router.routes)


def test_the_healthcheck_command_passes_on_a_live_service_and_fails_without_one(tmp_path: Path) -> None:
    argv = healthcheck_argv()
    assert argv[0] == "python"  # the image's venv Python: no curl in the image
    argv = [sys.executable, *argv[1:]]
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}", work_dir=tmp_path / "work",
        artifact_root=tmp_path / "jobs", api_tokens=["alice:secret"],
    )
    with serve(settings) as live:
        env = os.environ | {"KERNELGEN_PORT": str(live.settings.port)}
        assert subprocess.run(argv, env=env, capture_output=True, timeout=30).returncode == 0
    assert subprocess.run(argv, env=env, capture_output=True, timeout=30).returncode != 0


def test_compose_serves_on_all_addresses_on_the_published_port() -> None:
    service = compose()["services"]["kernelgen"]
    command = service["command"]
    assert command[0] == "serve" and command[command.index("--host") + 1] == "0.0.0.0"
    port = command[command.index("--port") + 1]
    assert any(str(mapping).split(":")[-1] == port for mapping in service["ports"])
    assert service["build"] == "."


def test_compose_reaches_postgres_by_its_service_name_and_waits_until_it_is_healthy() -> None:
    spec = compose()
    service, postgres = spec["services"]["kernelgen"], spec["services"]["postgres"]
    url = make_url(service["environment"]["KERNELGEN_DATABASE_URL"])
    assert url.drivername == "postgresql+psycopg"  # the scheme server/checkpoints.py rewrites for LangGraph
    assert url.host == "postgres" and url.host in spec["services"]
    assert url.database == postgres["environment"]["POSTGRES_DB"]
    assert url.username == postgres["environment"]["POSTGRES_USER"]
    assert url.password is None  # libpq takes it from PGPASSWORD, the same variable postgres is given
    assert interpolated(service["environment"]["PGPASSWORD"]) == interpolated(
        postgres["environment"]["POSTGRES_PASSWORD"])
    assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    assert postgres["image"].split(":")[0] == "postgres"


def test_compose_parses_and_has_a_gpu_and_a_cpu_profile_that_differ_only_in_the_gpu_and_the_torch() -> None:
    services = compose()["services"]
    gpu, cpu = services["kernelgen"], services["kernelgen-cpu"]
    assert gpu["profiles"] == ["gpu"] and cpu["profiles"] == ["cpu"]
    assert "profiles" not in services["postgres"]  # started with either
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert any(device["driver"] == "nvidia" and "gpu" in device["capabilities"] for device in devices)
    assert "deploy" not in cpu  # a GPU reservation makes compose refuse to start on a host without one
    assert cpu["build"]["context"] == "." and cpu["build"]["args"]["TORCH_INDEX_URL"].endswith("/whl/cpu")
    assert cpu["image"] != gpu["image"]
    shared = {key: value for key, value in gpu.items() if key not in ("profiles", "deploy", "build", "image")}
    assert shared == {key: value for key, value in cpu.items() if key not in ("profiles", "build", "image")}
    # User namespaces (seccomp), mounts inside them (AppArmor), a fresh /proc (the masked paths).
    for service in (gpu, cpu):
        assert BUBBLEWRAP_NEEDS <= set(service["security_opt"])


def test_compose_keeps_data_on_named_volumes() -> None:
    spec = compose()
    mounts = {
        name: {str(volume).split(":")[1]: str(volume).split(":")[0] for volume in spec["services"][name]["volumes"]}
        for name in ("kernelgen", "kernelgen-cpu", "postgres")
    }
    assert mounts["kernelgen"]["/data"] in spec["volumes"] and mounts["kernelgen-cpu"] == mounts["kernelgen"]
    assert mounts["postgres"]["/var/lib/postgresql/data"] in spec["volumes"]


@pytest.mark.parametrize("service", ["kernelgen", "kernelgen-cpu", "postgres"])
def test_compose_holds_no_default_secret(service: str) -> None:
    environment = compose()["services"][service]["environment"]
    for name, value in environment.items():
        if not re.search(r"PASSWORD|TOKEN|KEY|SECRET", name):
            continue
        references = re.findall(r"\$\{(\w+)(:?[-?])?([^}]*)\}", str(value))
        assert references, f"{name} is written in the file"
        for _, operator, default in references:
            assert operator.endswith("?") or default in ("", "[]"), f"{name} has a default: {default}"
