"""Commands that need no cluster do not load the Kubernetes client (nor the HTTP server)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from cli_run import HEAVY, run_cli

from argocd_image_updater.cli.main import LAZY_COMMANDS, SHORT_HELP, cli
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("version",),
        ("test", "--help"),
        ("run", "--help"),
        ("demo", "--help"),
        ("status", "--help"),
    ],
    ids=" ".join,
)
def test_help_and_version_load_no_cluster_client(args: tuple[str, ...]) -> None:
    result = run_cli(*args)
    assert result.returncode == 0, result.output
    assert result.heavy == ()


@pytest.mark.parametrize(
    "args", [("run", "--help"), ("hold", "--help"), ("release", "--help")], ids=" ".join
)
def test_command_help_loads_nothing_of_the_controller(args: tuple[str, ...]) -> None:
    # any module of the package loads the package itself
    result = run_cli(*args, watched=("argocd_image_updater.controller",))
    assert result.returncode == 0, result.output
    assert result.heavy == ()


@pytest.mark.parametrize("args", [("--help",), ("version",), ("test", "--help")], ids=" ".join)
def test_help_loads_no_http_client_yaml_parser_or_model_library(args: tuple[str, ...]) -> None:
    result = run_cli(*args, watched=("httpx", "pydantic", "ruamel.yaml", "cryptography"))
    assert result.returncode == 0, result.output
    assert result.heavy == ()


def test_test_help_lists_the_registered_strategies() -> None:
    from argocd_image_updater.policy.strategies import listed_names

    result = run_cli("test", "--help")
    assert listed_names() in " ".join(result.stdout.split())


def test_top_level_help_lists_every_command_with_its_own_help() -> None:
    result = run_cli("--help")
    for name in LAZY_COMMANDS:
        command = cli.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None
        assert SHORT_HELP[name] == command.get_short_help_str(200), name
        assert f"  {name} " in result.stdout


async def test_test_command_loads_no_cluster_client(registry: RegistryServer, repo: str) -> None:
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=datetime(2026, 1, 1, tzinfo=UTC))
    # nor httpx's own command line (rich), which the development tools happen to install, nor
    # what only a registries.conf file, a CA or a Helm chart repository needs, nor httpx's
    # transport (httpcore, AnyIO) or the metrics library, whose numbers nobody reads here, nor
    # the credential and cloud login machinery an anonymous registry does not use,
    watched = (*HEAVY, "rich", "pygments", "pydantic", "cryptography", "ruamel.yaml")
    watched += ("httpcore", "anyio", "h11", "prometheus_client")
    watched += (
        "argocd_image_updater.registry.credentials.providers",
        "argocd_image_updater.registry.cloud.refresh",
        "argocd_image_updater.config.credentials",
        # nor the manifest parser (a semver choice reads tag names only) or the chart model
        "argocd_image_updater.registry.manifest",
        "argocd_image_updater.model.chart",
    )
    result = run_cli("test", f"{registry.host}/{repo}", "--explain", watched=watched)
    assert result.returncode == 0, result.output
    assert "latest image according to constraint is" in result.output
    assert result.heavy == ()


def test_local_mode_once_loads_no_cluster_client_and_starts_with_what_applies(
    tmp_path: Path,
) -> None:
    (tmp_path / "apps").mkdir()
    result = run_cli(
        "run",
        "--once",
        "--applications-api",
        "local",
        "--local-path",
        str(tmp_path / "apps"),
        "--registries-conf-path",
        str(tmp_path / "registries.conf"),
        "--git-cache-dir",
        str(tmp_path / "clones"),
    )
    assert result.returncode == 0, result.output
    assert result.heavy == ()
    start = next(line for line in result.output.splitlines() if "msg=starting" in line)
    assert "applicationsAPI=local" in start and f"localPath={tmp_path / 'apps'}" in start
    assert "interval=once" in start
    # no probe is served with --once, and no namespace was given: neither is shown
    assert "healthPort" not in start and "argocdNamespace" not in start


def test_start_line_fields_follow_the_mode() -> None:
    from argocd_image_updater.cli.run_cmd import start_fields
    from argocd_image_updater.config.settings import resolve

    cluster = start_fields(resolve("run", {"argocd_namespace": "argo"}, env={}))
    assert cluster["healthPort"] == ":8081" and cluster["argocdNamespace"] == "argo"
    assert cluster["interval"] == "2m0s" and "localPath" not in cluster
    local = start_fields(
        resolve("run", {"applications_api": "local", "local_path": "apps", "once": True}, env={})
    )
    assert "healthPort" not in local and "argocdNamespace" not in local
    assert local["localPath"] == "apps" and local["interval"] == "once"
