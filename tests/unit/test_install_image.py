"""The container image: the Dockerfile's structure, and the offline wheel build and install it
relies on (no Docker engine needed)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from tools import SETUP_TOOLS, setup_tool

pytestmark = pytest.mark.system  # the container image and the wheel build

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
BUILD_SCRIPT = (ROOT / "scripts" / "build-image").read_text()
UV = setup_tool("uv")


def instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE)
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for word, rest in instructions():
        if word == "FROM":
            found.append([])
        if found:
            found[-1].append((word, rest))
    return found


def test_base_images_are_pinned_never_latest() -> None:
    args = dict(
        rest.split("=", 1) for word, rest in instructions() if word == "ARG" and "=" in rest
    )
    for word, rest in instructions():
        if word == "FROM":
            image = rest.split()[0]
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
            assert ":" in image and not image.endswith(":latest"), image
            assert re.search(r":\d+\.\d+\.\d+", image), f"{image}: pin a patch release"


def test_final_stage_runs_as_uid_1000_with_tini_and_the_original_tools() -> None:
    final = stages()[-1]
    assert ("USER", "1000:1000") in final
    assert ("ENTRYPOINT", '["/usr/bin/tini", "--", "argocd-image-updater"]') in final
    run = " ".join(rest for word, rest in final if word == "RUN")
    for package in ("git", "openssh-client", "gnupg", "tini", "ca-certificates"):
        assert re.search(rf"\s{re.escape(package)}(\s|$)", run), package
    assert "--uid 1000" in run
    env = " ".join(rest for word, rest in final if word == "ENV")
    assert "HOME=/app" in env and "GIT_CACHE_DIR=/tmp/" in env
    assert "PYTHONDONTWRITEBYTECODE=1" in env  # nothing written next to the code at run time


def test_build_installs_only_the_prepared_wheels_offline() -> None:
    install = stages()[0]
    run = " ".join(rest for word, rest in install if word == "RUN")
    assert run.count("pip install") == 2
    assert run.count("--no-index") == 2 and "--require-hashes" in run
    final = stages()[-1]
    copies = [rest for word, rest in final if word == "COPY"]
    assert copies == ["--from=install /app/venv /app/venv"]  # no source, no wheels in the image


def test_copied_paths_are_produced_by_the_build_script_and_allowed_in_the_context() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    allowed = {line[1:] for line in ignore if line.startswith("!")}
    for word, rest in instructions():
        if word == "COPY" and not rest.startswith("--from"):
            for source in rest.split()[:-1]:
                assert source in allowed, f"{source} is excluded by .dockerignore"
                assert source.startswith("dist/")
    assert "-o dist/requirements.txt" in BUILD_SCRIPT
    assert "build --wheel -o dist/" in BUILD_SCRIPT
    assert "-d dist/wheels" in BUILD_SCRIPT
    assert "docker build" in BUILD_SCRIPT


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def test_the_uv_that_setup_installs_is_found() -> None:
    """After the README's setup the wheel tests run: uv is on PATH or in .tools/bin."""
    if not (SETUP_TOOLS / "uv").exists() and shutil.which("uv") is None:
        pytest.skip("scripts/setup has not been run here")
    assert UV is not None


def build_wheel(out: Path) -> Path:
    if UV is None:
        pytest.skip("uv is not on PATH")
    result = subprocess.run(
        [UV, "build", "--offline", "--wheel", "-o", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        pytest.skip(
            f"the build backend is not in the local uv cache (needs PyPI): {result.stderr[-300:]}"
        )
    [wheel] = out.glob("argocd_image_updater-*.whl")
    return wheel


def test_wheel_builds_offline_with_the_entry_point_and_no_test_double(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(f"{dist_info}/METADATA").decode()
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    assert "argocd_image_updater/cli/main.py" in names
    assert not [n for n in names if "sandbox" in n or "testing" in n or "demo" in n]
    assert not [n for n in names if n.endswith((".yaml", ".json")) and "verify/data" not in n]
    assert "argocd-image-updater = argocd_image_updater.cli.console:main" in entry_points
    required = {
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    }
    required_names = {normalise(re.split(r"[\[<>=;]", r)[0]) for r in required}
    for dependency in project["dependencies"]:
        assert normalise(re.split(r"[\[<>=]", dependency)[0]) in required_names, dependency


PREPARED = ROOT / "dist"


@pytest.mark.skipif(
    not (PREPARED / "requirements.txt").is_file() or not list(PREPARED.glob("wheels/*.whl")),
    reason="dist/ is not prepared: run scripts/build-image --prepare-only first (downloads wheels)",
)
def test_prepared_wheels_install_without_an_index(tmp_path: Path) -> None:
    """The install stage of the Dockerfile, run against dist/ in a fresh virtualenv."""
    [wheel] = PREPARED.glob("argocd_image_updater-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=120)
    pip = [str(tmp_path / "venv" / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    offline = ["--no-cache-dir", "--no-index", "--isolated"]
    subprocess.run(
        [*pip, "install", "-q", *offline, "--find-links", str(PREPARED / "wheels"),
         "--require-hashes", "-r", str(PREPARED / "requirements.txt")],
        check=True, timeout=300,
    )  # fmt: skip
    subprocess.run(
        [*pip, "install", "-q", *offline, "--no-deps", str(wheel)], check=True, timeout=120
    )
    result = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "argocd-image-updater"), "version"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert result.stdout.startswith("argocd-image-updater: v")


def test_ci_builds_and_checks_the_image_before_the_suite() -> None:
    steps = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip().startswith(("scripts/", "exec scripts/"))
    ]
    assert steps == ["scripts/test-image", "exec scripts/test"]


def test_the_image_ships_bytecode_so_a_read_only_root_needs_no_compiling() -> None:
    run_lines = [rest for word, rest in instructions() if word == "RUN"]
    assert any("compileall" in line and "unchecked-hash" in line for line in run_lines)
    assert not any("-name '*.pyc'" in line and "-delete" in line for line in run_lines)
