"""Shared setup for controller tests: a registries.conf for a sandbox registry, and the
one-Application fleet several tests start from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 1, 1, tzinfo=UTC)


def registries_conf(tmp_path: Path, registry: RegistryServer) -> Path:
    """A registries.conf pointing the registry's host at its plain-HTTP API."""
    conf = tmp_path / "registries.conf"
    conf.write_text(
        f"registries:\n- name: t\n  prefix: {registry.host}\n  api_url: {registry.url}\n"
    )
    return conf


async def seed_web_app(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, tags: list[str]
) -> tuple[str, Path]:
    """Push ``tags`` (one day apart), an Application ``web`` running ``1.0.0`` and an
    ImageUpdater ``web`` managing it; returns the image and the registries.conf."""
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(tags):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    image = f"{registry.host}/{repo}"
    kube.store.put(
        objects.application(
            "web", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
        )
    )
    kube.store.put(
        objects.image_updater(
            "web",
            NS,
            {
                "applicationRefs": [
                    {"namePattern": "web", "images": [{"alias": "web", "imageName": image}]}
                ]
            },
        )
    )
    return image, registries_conf(tmp_path, registry)


def pr_fleet(
    kube: KubeApiServer, image: str, url: str, token: str, pull_request: dict[str, Any]
) -> None:
    """Application ``pr-app`` (image ``image:1.0.0``, kustomization at ``app`` on ``main`` of
    ``url``), its repository Secret (user ``bot``, password ``token``) and an ImageUpdater
    ``pr`` writing back through git with ``gitConfig.pullRequest`` = ``pull_request``."""
    kube.store.put(
        objects.secret(
            "repo-deploy",
            NS,
            {"url": url, "username": "bot", "password": token, "insecure": "true"},
            labels={"argocd.argoproj.io/secret-type": "repository"},
        )
    )
    kube.store.put(
        objects.application(
            "pr-app",
            NS,
            images=[f"{image}:1.0.0"],
            repo_url=url,
            path="app",
            target_revision="main",
        )
    )
    kube.store.put(
        objects.image_updater(
            "pr",
            NS,
            {
                "writeBackConfig": {
                    "method": "git",
                    "gitConfig": {
                        "writeBackTarget": "kustomization",
                        "pullRequest": pull_request,
                    },
                },
                "applicationRefs": [
                    {
                        "namePattern": "pr-app",
                        "images": [{"alias": "web", "imageName": f"{image}:~1.0"}],
                    }
                ],
            },
        )
    )


async def git_cycle(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp: Path, start: datetime
) -> CycleResult | None:
    """Push ``1.0.0`` and ``1.0.1`` of ``repo`` (a day apart from ``start``), then run one cycle
    of a controller built as ``run`` builds it, with git clones under ``tmp``."""
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.0.1"]):
            await pusher.push_image(repo, tag, created=start + timedelta(days=i))
    settings = resolve(
        "run",
        {
            "kubeconfig": str(kube.write_kubeconfig(tmp / "kubeconfig", namespace=NS)),
            "registries_conf_path": str(registries_conf(tmp, registry)),
            "git_cache_dir": str(tmp / "clones"),
            "git_commit_message_path": str(tmp / "no-template"),
        },
        env={},
    )
    controller, closers = await build_controller(settings)
    try:
        return await controller.cycle()
    finally:
        for closer in reversed(closers):
            await close_resource(closer)
