"""The cloud SDKs are optional extras: find out whether one is installed, or say how to get it."""

from __future__ import annotations

import importlib.util
from typing import Final

from argocd_image_updater.config.cloud_options import CloudKind
from argocd_image_updater.registry.cloud.errors import CloudLoginError, Failure
from argocd_image_updater.registry.cloud.hosts import CLOUD_NAMES, EXTRAS

_MODULES: Final = {
    CloudKind.ECR: ("boto3", "botocore"),
    CloudKind.GCP: ("google.auth", "requests"),
    CloudKind.AZURE: ("azure.identity", "azure.core"),
}
_PACKAGES: Final = {
    CloudKind.ECR: "boto3",
    CloudKind.GCP: "google-auth",
    CloudKind.AZURE: "azure-identity",
}


def install_hint(kind: CloudKind) -> str:
    return f"pip install 'argocd-image-updater[{EXTRAS[kind]}]'"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing
        return False


def sdk_installed(kind: CloudKind) -> bool:
    return all(_importable(m) for m in _MODULES[kind])


def missing_sdk_error(kind: CloudKind) -> CloudLoginError:
    return CloudLoginError(
        f"{kind}: the {CLOUD_NAMES[kind]} login needs {_PACKAGES[kind]}, which is not installed: "
        f"{install_hint(kind)}",
        Failure.SDK_MISSING,
    )


def require_sdk(kind: CloudKind) -> None:
    """Raise :class:`CloudLoginError` naming the extra to install when the SDK is missing."""
    if not sdk_installed(kind):
        raise missing_sdk_error(kind)
