"""PR mode through the controller on Gitea, Bitbucket Cloud, Bitbucket Data Center and Azure
DevOps: the ImageUpdater selects the host with ``gitConfig.pullRequest.<host>: {apiURL}`` (no
process flag), the token and user name come from the Argo CD repository Secret, the change is
pushed to a real git server and the request opened on the host's API stand-in. A second cycle
while the request is open pushes nothing and opens nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import pr_fleet, registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater_testing.git_servers import GitHttpServer, bare_repo, push_attempts
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer
from argocd_image_updater_testing.scm_azure_devops import AzureDevOpsFake
from argocd_image_updater_testing.scm_bitbucket import BitbucketCloudFake
from argocd_image_updater_testing.scm_bitbucket_server import BitbucketServerFake
from argocd_image_updater_testing.scm_gitea import GiteaFake
from argocd_image_updater_testing.scm_hosted import HostedFake

NS = "argocd"
START = datetime(2026, 4, 1, tzinfo=UTC)
TOKEN = "host-t0ken-for-the-pr-api"


def _gitea(root: Path) -> tuple[HostedFake, Callable[[HostedFake], str], str]:
    return (
        GiteaFake(tokens=[TOKEN], repos=["org/deploy"], git_root=root),
        (
            lambda f: f.api_url  # type: ignore[attr-defined]
        ),
        "org/deploy",
    )


def _bitbucket(root: Path) -> tuple[HostedFake, Callable[[HostedFake], str], str]:
    fake = BitbucketCloudFake(app_passwords={"bot": TOKEN}, repos=["org/deploy"], git_root=root)
    return fake, (lambda f: f.api_url), "org/deploy"  # type: ignore[attr-defined]


def _bitbucket_server(root: Path) -> tuple[HostedFake, Callable[[HostedFake], str], str]:
    fake = BitbucketServerFake(tokens=[TOKEN], repos=["org/deploy"], git_root=root)
    return fake, (lambda f: f.api_url), "org/deploy"  # type: ignore[attr-defined]


def _azure_devops(root: Path) -> tuple[HostedFake, Callable[[HostedFake], str], str]:
    fake = AzureDevOpsFake(tokens=[TOKEN])
    fake.add_repo("contoso/Platform/deploy", git_dir=root / "org" / "deploy.git")
    path = "contoso/Platform/deploy"
    return fake, (lambda f: f.api_url(path)), path  # type: ignore[attr-defined]


HOSTS = {
    "gitea": _gitea,
    "bitbucket": _bitbucket,
    "bitbucketServer": _bitbucket_server,
    "azureDevOps": _azure_devops,
}


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.mark.parametrize("provider", list(HOSTS))
async def test_a_cycle_opens_the_request_on_the_selected_host(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, provider: str
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.0.1"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    image = f"{registry.host}/{repo}"
    root = tmp_path / "srv"
    remote = bare_repo(
        root / "org" / "deploy.git",
        files={"app/kustomization.yaml": f"images:\n- name: {image}\n  newTag: 1.0.0\n"},
    )
    fake, api_of, path = HOSTS[provider](root)
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(registries_conf(tmp_path, registry)),
            "git_cache_dir": str(tmp_path / "clones"),
            "git_commit_message_path": str(tmp_path / "no-template"),
        },
        env={},
    )
    with GitHttpServer(root, users={"bot": TOKEN}) as git_http:
        async with fake:
            pr_fleet(
                kube,
                image,
                git_http.url_for("org/deploy.git"),
                TOKEN,
                {provider: {"apiURL": api_of(fake)}, "labels": ["images"]},
            )
            controller, closers = await build_controller(settings)
            try:
                first = await controller.cycle()
                assert first.errors == 0 and first.images_updated == 1, first.apps[0].error
                (pull,) = fake.pulls(path)
                pushes, requests = push_attempts(remote), len(fake.requests)
                second = await controller.cycle()
            finally:
                for closer in reversed(closers):
                    await close_resource(closer)
    assert pull.state == "open" and pull.base == "main"
    assert pull.head.startswith("image-updater-")
    assert "1.0.1" in pull.title or "1.0.1" in pull.body
    wanted: list[Any] = ["images"] if provider in ("gitea", "azureDevOps") else []
    assert pull.labels == wanted
    assert all(TOKEN not in str(r.query) and TOKEN not in r.path for r in fake.requests)
    assert second.errors == 0, second.apps[0].error
    assert second.images_updated == 0
    assert push_attempts(remote) == pushes
    assert len(fake.pulls(path)) == 1
    assert not [r for r in fake.requests[requests:] if r.method != "GET"]
