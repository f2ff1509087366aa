"""Which cloud a registry host belongs to, and what its name says (ECR account and region).

Pure functions: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from argocd_image_updater.config.cloud_options import CloudKind

EXTRAS: Final = {CloudKind.ECR: "aws", CloudKind.GCP: "gcp", CloudKind.AZURE: "azure"}
"""The optional dependency group (``pip install 'argocd-image-updater[<extra>]'``) of each kind."""

CLOUD_NAMES: Final = {
    CloudKind.ECR: "AWS ECR",
    CloudKind.GCP: "Google Artifact Registry / GCR",
    CloudKind.AZURE: "Azure ACR",
}

ECR_PUBLIC_HOST: Final = "public.ecr.aws"
ECR_PUBLIC_REGION: Final = "us-east-1"

# <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn], and the dual-stack <account>.dkr-ecr.<region>.on.aws
_ECR_PRIVATE: Final = re.compile(
    r"^(?P<account>\d{12})\.dkr[.-]ecr(?:-fips)?\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)"
    r"\.(?:amazonaws\.com(?:\.cn)?|on\.aws)$"
)
_GCP: Final = re.compile(r"^(?:(?:[a-z0-9-]+\.)?gcr\.io|[a-z0-9-]+-docker\.pkg\.dev)$")
_ACR: Final = re.compile(r"^[a-z0-9-]+\.azurecr\.(?:io|cn|us)$")


def hostname(host: str) -> str:
    """``host[:port]`` → lower-case host name without the port."""
    name = host.strip().lower()
    if name.startswith("["):
        return name.split("]", 1)[0] + "]"
    return name.rsplit(":", 1)[0] if name.count(":") == 1 else name


def registry_host(prefix: str, api_host: str) -> str:
    """The registry's name as written in image references (the ``prefix`` host, e.g.
    ``<account>.dkr.ecr.<region>.amazonaws.com``), else the API's host."""
    return prefix.split("/", 1)[0] or api_host


@dataclass(frozen=True, slots=True)
class EcrHost:
    """What an ECR registry host name says. ``public`` is ``public.ecr.aws``."""

    account: str = ""
    region: str = ""
    public: bool = False


def parse_ecr_host(host: str) -> EcrHost | None:
    """``123456789012.dkr.ecr.eu-west-1.amazonaws.com`` → account and region; None otherwise."""
    name = hostname(host)
    if name == ECR_PUBLIC_HOST:
        return EcrHost(region=ECR_PUBLIC_REGION, public=True)
    match = _ECR_PRIVATE.match(name)
    if match is None:
        return None
    return EcrHost(account=match["account"], region=match["region"])


def cloud_of_host(host: str) -> CloudKind | None:
    """The cloud whose registry ``host`` is, by its name alone."""
    name = hostname(host)
    if parse_ecr_host(name) is not None:
        return CloudKind.ECR
    if _GCP.match(name):
        return CloudKind.GCP
    if _ACR.match(name):
        return CloudKind.AZURE
    return None
