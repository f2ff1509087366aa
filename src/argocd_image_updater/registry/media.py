"""Media types and digests of registry content: what a request asks for and how a digest looks.

A request path needs only these (a tag list, a ``HEAD`` for a digest); parsing the content is
:mod:`~argocd_image_updater.registry.manifest`, imported where a manifest or config is read.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

OCI_MANIFEST: Final = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX: Final = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST: Final = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST: Final = "application/vnd.docker.distribution.manifest.list.v2+json"

OCI_IMAGE_CONFIG: Final = "application/vnd.oci.image.config.v1+json"
DOCKER_IMAGE_CONFIG: Final = "application/vnd.docker.container.image.v1+json"
IMAGE_CONFIG_TYPES: Final = frozenset({OCI_IMAGE_CONFIG, DOCKER_IMAGE_CONFIG})
CREATED_ANNOTATION: Final = "org.opencontainers.image.created"
IMAGE_MANIFEST_TYPES: Final = frozenset({OCI_MANIFEST, DOCKER_MANIFEST})
INDEX_TYPES: Final = frozenset({OCI_INDEX, DOCKER_MANIFEST_LIST})
MANIFEST_ACCEPT: Final = ", ".join((OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST))
"""Always send all four: a registry converts or hides manifests whose type was not accepted."""

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_digest(reference: str) -> bool:
    """True for a ``sha256:<64 hex>`` reference (the only algorithm registries use in practice)."""
    return _DIGEST.match(reference) is not None
