"""The ``test`` command end to end: the real CLI against a real registry, no Kubernetes."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

START = datetime(2026, 3, 1, tzinfo=UTC)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "argocd_image_updater", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=full_env,
        check=False,
    )


def conf_for(tmp_path: Path, server: RegistryServer, credentials: str = "") -> Path:
    path = tmp_path / "registries.conf"
    extra = f"  credentials: {credentials}\n" if credentials else ""
    path.write_text(
        f"registries:\n- name: test\n  prefix: {server.host}\n  api_url: {server.url}\n{extra}"
    )
    return path


async def push(server: RegistryServer, repo: str, tags: list[str], **kw: object) -> None:
    async with ImagePusher(server.url, **kw) as pusher:  # type: ignore[arg-type]
        for i, tag in enumerate(tags):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))


async def test_semver_constraint_picks_newest_patch(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push(registry, repo, ["1.0.0", "1.0.1", "1.1.0", "2.0.0-rc.1", "latest"])
    conf = conf_for(tmp_path, registry)
    image = f"{registry.host}/{repo}"
    result = cli("test", image, "--semver-constraint", "~1.0", "--registries-conf-path", str(conf))
    assert result.returncode == 0, result.stderr
    assert f"latest image according to constraint is {image}:1.0.1" in result.stdout
    assert "Found 5 tags in registry" in result.stdout

    result = cli("test", image, "--registries-conf-path", str(conf), "--explain")
    assert result.returncode == 0, result.stderr
    assert f"latest image according to constraint is {image}:1.1.0" in result.stdout
    lines = {
        line.split()[0]: line.split()[1]
        for line in result.stdout.splitlines()
        if line[:1].isalnum() and "level=" not in line
    }
    assert lines["1.1.0"] == "chosen"
    assert lines["2.0.0-rc.1"] == "prerelease"
    assert lines["latest"] == "not-semver"
    assert lines["1.0.1"] == "older"


async def test_no_candidate_exits_non_zero_with_reason(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push(registry, repo, ["1.0.0", "latest"])
    conf = conf_for(tmp_path, registry)
    result = cli(
        "test",
        f"{registry.host}/{repo}",
        "--semver-constraint",
        "^3",
        "--registries-conf-path",
        str(conf),
    )
    assert result.returncode == 3
    assert "no newer version of image found" in result.stdout
    assert "^3" in result.stdout


async def test_credentials_reference_and_wrong_password(
    basic_registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    from argocd_image_updater.model.registry import Credentials

    ((USER, PASSWORD),) = basic_registry.users.items()
    await push(basic_registry, repo, ["0.1.0", "0.2.0"], credentials=Credentials(USER, PASSWORD))
    conf = conf_for(tmp_path, basic_registry)
    image = f"{basic_registry.host}/{repo}"
    ok = cli(
        "test",
        image,
        "--registries-conf-path",
        str(conf),
        "--credentials",
        "env:REG_CREDS",
        env={"REG_CREDS": f"{USER}:{PASSWORD}"},
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"is {image}:0.2.0" in ok.stdout
    wrong = "not-the-right-one-42"
    bad = cli(
        "test",
        image,
        "--registries-conf-path",
        str(conf),
        "--credentials",
        "env:REG_CREDS",
        "--loglevel",
        "trace",
        env={"REG_CREDS": f"{USER}:{wrong}"},
    )
    assert bad.returncode == 1
    assert basic_registry.host in bad.stderr
    assert wrong not in bad.stdout + bad.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["Not/Valid:1"], "Not/Valid:1"),
        (["nginx", "--update-strategy", "digest"], "without a version constraint"),
        (["nginx", "--semver-constraint", "latest"], "latest"),
    ],
)
def test_bad_input_is_a_clear_error(args: list[str], message: str) -> None:
    result = cli("test", *args)
    assert result.returncode == 1
    assert message in result.stderr


def test_bad_registries_conf_names_the_key(tmp_path: Path) -> None:
    conf = tmp_path / "registries.conf"
    conf.write_text(
        "registries:\n- name: x\n  api_url: https://x.io\n  prefix: x.io\n  ratelimit: 5\n"
    )
    result = cli("test", "x.io/app", "--registries-conf-path", str(conf))
    assert result.returncode == 1
    assert "ratelimit" in result.stderr


async def test_explain_shows_the_warnings_of_the_settings(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push(registry, repo, ["1.0.0", "1.1.0"])
    conf = conf_for(tmp_path, registry)
    image = f"{registry.host}/{repo}"
    result = cli(
        "test",
        image,
        "--update-strategy",
        "newest-buildz",
        "--allow-tags",
        "regexp:^1.(",
        "--registries-conf-path",
        str(conf),
        "--explain",
    )
    out = result.stdout
    assert "warning: --update-strategy: Unknown sort option newest-buildz -- using semver" in out
    assert "warning: --allow-tags: could not compile regexp '^1.('" in out
    warnings = [line for line in out.splitlines() if "level=warning" in line]
    assert any("Unknown sort option newest-buildz" in line for line in warnings), out
    assert any("^1.(" in line for line in warnings), out
    # the invalid allowTags matches no tag: nothing is chosen, exit code 3
    assert result.returncode == 3, result.stderr


async def test_explain_says_when_a_too_young_tag_is_eligible(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    created = now - timedelta(hours=2)
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=now - timedelta(days=30))
        await pusher.push_image(repo, "1.1.0", created=created)
    conf = conf_for(tmp_path, registry)
    image = f"{registry.host}/{repo}"
    args = ("--min-age", "24h", "--min-age-from", "created", "--registries-conf-path", str(conf))
    result = cli("test", image, *args, "--explain")
    assert result.returncode == 0, result.stderr
    eligible = (created + timedelta(hours=24)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f"too-young: 1.1.0 eligible at {eligible}" in result.stdout.splitlines()
    assert f"latest image according to constraint is {image}:1.0.0" in result.stdout

    bad = cli("test", image, "--min-age", "3 days", "--registries-conf-path", str(conf))
    assert bad.returncode == 1 and "--min-age: " in bad.stdout + bad.stderr
