"""Tenants writing to one repository and branch through the controller (real git over smart
HTTP with Basic auth, the Kubernetes API fake, the real registry): each tenant's change is
pushed with its own credentials, never with another tenant's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import GitHttpServer, bare_repo, show
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 4, 1, tzinfo=UTC)
USERS = {"alice": "alice-token", "bob": "bob-token"}


def kustomization(image: str) -> str:
    return (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"images:\n- name: {image}\n  newTag: 1.0.0\n"
    )


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


async def test_each_tenant_pushes_to_a_shared_branch_with_its_own_credentials(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.0.1"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    image = f"{registry.host}/{repo}"
    root = tmp_path / "srv"
    files = {f"{user}/kustomization.yaml": kustomization(image) for user in USERS}
    remote = bare_repo(root / "deploy.git", files=files)
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
    with GitHttpServer(root, users=USERS) as git_http:
        url = git_http.url_for("deploy.git")
        for user, token in USERS.items():
            kube.store.put(
                objects.secret(
                    f"{user}-git",
                    NS,
                    {"username": user, "password": token, "insecure": "true"},
                )
            )
            kube.store.put(
                objects.application(
                    f"{user}-app",
                    NS,
                    images=[f"{image}:1.0.0"],
                    repo_url=url,
                    path=user,
                    target_revision="main",
                )
            )
            kube.store.put(
                objects.image_updater(
                    user,
                    NS,
                    {
                        "writeBackConfig": {
                            "method": f"git:secret:{NS}/{user}-git",
                            "gitConfig": {"writeBackTarget": "kustomization"},
                        },
                        "applicationRefs": [
                            {
                                "namePattern": f"{user}-app",
                                "images": [{"alias": "web", "imageName": image}],
                            }
                        ],
                    },
                )
            )
        controller, closers = await build_controller(settings)
        try:
            result = await controller.cycle()
        finally:
            for closer in reversed(closers):
                await close_resource(closer)
        pushes = {user: git_http.requests[f"receive-pack@{user}"] for user in USERS}
    assert result.errors == 0 and result.images_updated == 2, [a.error for a in result.apps]
    # each tenant pushed (ref advertisement and pack: two requests a push), as itself
    assert pushes["alice"] >= 2 and pushes["bob"] >= 2, pushes
    home = tmp_path / "home"
    home.mkdir()
    for user in USERS:
        text = show(remote, "main", f"{user}/kustomization.yaml", home=home)
        assert text == kustomization(image).replace("1.0.0", "1.0.1")
