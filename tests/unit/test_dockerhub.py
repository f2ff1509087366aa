"""One list of Docker Hub host names, and every place that asks "is this Docker Hub?" uses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from argocd_image_updater.config.dockerconfig import canonical_location
from argocd_image_updater.config.registries import canonical_registry
from argocd_image_updater.model.dockerhub import DOCKER_HUB, DOCKER_HUB_HOSTS, is_docker_hub_host
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.registry_event import normalise_registry, repository_key

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("host", sorted(DOCKER_HUB_HOSTS))
def test_every_docker_hub_host_is_docker_hub_everywhere(host: str) -> None:
    assert is_docker_hub_host(host) and is_docker_hub_host(host.upper())
    assert ImageRef.parse(f"{host}/team/app:1.0").is_docker_hub
    assert canonical_registry(f"{host}/team") == f"{DOCKER_HUB}/team"
    assert canonical_location(f"https://{host}/v1/") == DOCKER_HUB
    assert normalise_registry(f"https://{host}/") == DOCKER_HUB
    assert repository_key(host, "nginx") == (DOCKER_HUB, "library/nginx")


@pytest.mark.parametrize("host", ["", "ghcr.io", "docker.io.example.com", "hub.docker.com"])
def test_other_hosts_are_not_docker_hub(host: str) -> None:
    assert not is_docker_hub_host(host)
    assert canonical_registry(f"{host}/team") == f"{host}/team"
    assert normalise_registry(host) == (host or DOCKER_HUB)  # no host at all: Docker Hub


def test_parsing_rewrites_only_the_legacy_domain_like_the_reference_grammar() -> None:
    # the original keeps docker.io only when it is written literally
    assert ImageRef.parse("index.docker.io/team/app:1").registry == ""
    assert ImageRef.parse("docker.io/team/app:1").registry == DOCKER_HUB
    assert ImageRef.parse("team/app:1").registry == ""
    assert ImageRef.parse("registry-1.docker.io/team/app:1").registry == "registry-1.docker.io"
    assert ImageRef.parse("nginx").is_docker_hub
    assert not ImageRef.parse("ghcr.io/team/app").is_docker_hub


def test_the_docs_name_every_docker_hub_host() -> None:
    text = (DOCS / "registries.md").read_text(encoding="utf-8")
    assert sorted(h for h in DOCKER_HUB_HOSTS if f"`{h}`" not in text) == []
