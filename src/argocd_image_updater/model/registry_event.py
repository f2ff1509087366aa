"""A pushed image reported by a registry (a webhook notification), and the canonical
``(registry, repository)`` key that matches events against the images of Applications."""

from __future__ import annotations

from dataclasses import dataclass

from argocd_image_updater.model.dockerhub import DOCKER_HUB, is_docker_hub_host


@dataclass(frozen=True, slots=True)
class RegistryEvent:
    """One pushed image reported by a registry.

    ``registry`` is the registry host as the payload reports it (may be empty for ``aliyun-acr``
    without a region, like the original), ``repository`` the repository path inside it, ``tag``
    the pushed tag (empty for a digest-only ``acr`` push) and ``source_type`` the webhook type that
    produced the event (``docker.io``, ``harbor``, …).
    """

    registry: str
    repository: str
    tag: str
    digest: str = ""
    source_type: str = ""

    def __str__(self) -> str:
        ref = f"{self.registry}/{self.repository}" if self.registry else self.repository
        if self.tag:
            ref = f"{ref}:{self.tag}"
        if self.digest:
            ref = f"{ref}@{self.digest}"
        return ref


def normalise_registry(host: str) -> str:
    """The canonical form of a registry host, for matching events against configured images.

    The host is lower-cased, a leading ``http://``/``https://`` and anything after the first ``/``
    are dropped, and every Docker Hub host name
    (:data:`~argocd_image_updater.model.dockerhub.DOCKER_HUB_HOSTS`) and the empty host become
    ``docker.io``. Ports are kept.

    Upstream matching lets an image *without* a registry host match events from any registry;
    callers wanting that rule must test for the empty host before normalising it.
    """
    text = host.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("/", 1)[0]
    return DOCKER_HUB if not text or is_docker_hub_host(text) else text


def repository_key(registry: str, repository: str) -> tuple[str, str]:
    """``(registry, repository)`` in canonical form, for matching events against images.

    The registry goes through :func:`normalise_registry`; surrounding slashes and blanks are
    removed from the repository, and on Docker Hub a single-component name gets the implicit
    ``library/`` namespace (``nginx`` and ``library/nginx`` are the same repository). The
    repository's case is kept.
    """
    host = normalise_registry(registry)
    name = repository.strip().strip("/")
    if host == DOCKER_HUB and name and "/" not in name:
        name = f"library/{name}"
    return host, name
