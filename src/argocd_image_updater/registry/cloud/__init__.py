"""Native cloud registry logins: AWS ECR, Google Artifact Registry/GCR and Azure ACR.

Credential references ``ecr:``, ``gcp:`` and ``azure:`` (and auto-detection by registry host)
get short-lived registry credentials from the pod's cloud identity through the cloud's own SDK,
an optional extra (``pip install 'argocd-image-updater[aws,gcp,azure]'``).

* ``hosts``, ``jwt`` — pure: host names, token claims (the reference options are
  :mod:`argocd_image_updater.config.cloud_options`);
* ``ecr``, ``gcp``, ``azure`` — one login each, SDK calls in worker threads;
* ``refresh`` — the token cache (early refresh, single flight, back-off, refusal);
* ``logins`` — the process-wide logins; ``detect`` — auto-detection; ``sdk`` — the extras.

The names below are imported on first use, so that auto-detection for a registry that is no
cloud's (``detect``, ``hosts``) loads no login machinery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from argocd_image_updater.config.cloud_options import CloudKind
    from argocd_image_updater.registry.cloud.errors import CloudLoginError, Failure
    from argocd_image_updater.registry.cloud.refresh import CloudToken, TokenRefresher

_MODULE_OF: Final = {
    "CloudKind": "argocd_image_updater.config.cloud_options",
    "CloudLoginError": f"{__name__}.errors",
    "Failure": f"{__name__}.errors",
    "CloudToken": f"{__name__}.refresh",
    "TokenRefresher": f"{__name__}.refresh",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["CloudKind", "CloudLoginError", "CloudToken", "Failure", "TokenRefresher"]
