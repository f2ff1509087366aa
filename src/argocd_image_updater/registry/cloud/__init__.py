"""Native cloud registry logins: AWS ECR, Google Artifact Registry/GCR and Azure ACR.

Credential references ``ecr:``, ``gcp:`` and ``azure:`` (and auto-detection by registry host)
get short-lived registry credentials from the pod's cloud identity through the cloud's own SDK,
an optional extra (``pip install 'argocd-image-updater[aws,gcp,azure]'``).

* ``hosts``, ``jwt`` — pure: host names, token claims (the reference options are
  :mod:`argocd_image_updater.config.cloud_options`);
* ``ecr``, ``gcp``, ``azure`` — one login each, SDK calls in worker threads;
* ``refresh`` — the token cache (early refresh, single flight, back-off, refusal);
* ``logins`` — the process-wide logins; ``detect`` — auto-detection; ``sdk`` — the extras.
"""

from argocd_image_updater.config.cloud_options import CloudKind
from argocd_image_updater.registry.cloud.errors import CloudLoginError, Failure
from argocd_image_updater.registry.cloud.refresh import CloudToken, TokenRefresher

__all__ = ["CloudKind", "CloudLoginError", "CloudToken", "Failure", "TokenRefresher"]
