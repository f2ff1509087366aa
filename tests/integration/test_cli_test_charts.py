"""``test`` for Helm charts and OCI artifacts: the real CLI against the real registry and a Helm
repository over HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from test_cli_test_command import cli, conf_for

from argocd_image_updater_testing.helm_repo import HelmRepoServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

START = datetime(2026, 3, 1, tzinfo=UTC)


def verdicts(stdout: str) -> dict[str, str]:
    return {
        line.split()[0]: line.split()[1]
        for line in stdout.splitlines()
        if line[:1].isalnum() and "level=" not in line and len(line.split()) > 1
    }


async def test_oci_chart_constraint_in_the_reference_or_the_flag(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for i, version in enumerate(["1.0.0", "1.3.0", "2.0.0", "2.1.0-rc.1"]):
            await pusher.push_chart(f"{repo}/web", version, created=START + timedelta(days=i))
    conf = str(conf_for(tmp_path, registry))
    chart = f"oci://{registry.host}/{repo}/web"

    result = cli("test", f"{chart}:^1", "--registries-conf-path", conf, "--explain")
    assert result.returncode == 0, result.stderr
    assert f"latest image according to constraint is {chart}:1.3.0" in result.stdout
    lines = verdicts(result.stdout)
    assert lines["1.3.0"] == "chosen"
    assert lines["2.0.0"] == "outside-constraint"
    assert lines["2.1.0-rc.1"] == "outside-constraint"

    result = cli("test", f"{chart}:^1", "--semver-constraint", "^2", "--registries-conf", conf)
    assert result.returncode == 0, result.stderr
    assert f"latest image according to constraint is {chart}:2.0.0" in result.stdout

    result = cli("test", chart, "--update-strategy", "newest-build", "--registries-conf", conf)
    assert result.returncode == 0, result.stderr
    assert f"latest image according to constraint is {chart}:2.1.0-rc.1" in result.stdout

    result = cli("test", f"{chart}:^9", "--registries-conf", conf)
    assert result.returncode == 3
    assert "no newer version of image found" in result.stdout


async def test_non_chart_oci_artifact(registry: RegistryServer, repo: str, tmp_path: Path) -> None:
    async with ImagePusher(registry.url) as pusher:
        for version in ["0.1.0", "0.2.0"]:
            await pusher.push_artifact(
                repo,
                version,
                config_media_type="application/vnd.oci.empty.v1+json",
                config=b"{}",
                layer_media_type="application/vnd.example.manifests.v1.tar",
                layer=version.encode(),
                artifact_type="application/vnd.example.manifests",
            )
    conf = str(conf_for(tmp_path, registry))
    chart = f"oci://{registry.host}/{repo}"
    result = cli("test", chart, "--registries-conf", conf)
    assert result.returncode == 0, result.stderr
    assert f"latest image according to constraint is {chart}:0.2.0" in result.stdout


def test_helm_repository_chart() -> None:
    with HelmRepoServer() as repo:
        repo.set_chart("api", {"0.1.0": START, "0.2.0": START, "1.0.0": START})
        chart = f"{repo.url}/api"
        result = cli("test", f"{chart}:<1", "--explain")
        assert result.returncode == 0, result.stderr
        assert f"latest image according to constraint is {chart}:0.2.0" in result.stdout
        assert verdicts(result.stdout)["1.0.0"] == "outside-constraint"

        result = cli("test", f"{repo.url}/nope")
        assert result.returncode == 1
        assert "chart 'nope' is not listed in" in result.stdout + result.stderr


def test_bad_chart_reference_exits_one() -> None:
    result = cli("test", "oci://registry.example.com")
    assert result.returncode == 1
    assert "invalid chart reference" in result.stdout + result.stderr
