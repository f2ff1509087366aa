"""Fetching registry credentials: what a reference (:mod:`argocd_image_updater.config.
credentials`) points to, read from the environment, an ``ext:`` script, a Secret or a cloud login.

* ``fetch`` — :func:`fetch_credentials`, one read of one reference;
* ``scripts`` — running ``ext:`` scripts;
* ``providers`` — the scan's credential providers: single flight, ``credsexpire`` caching,
  refetch after a refusal, auto-detected cloud logins;
* ``errors`` — :class:`CredentialsError`.
"""

from argocd_image_updater.registry.credentials.errors import CredentialsError
from argocd_image_updater.registry.credentials.fetch import fetch_credentials
from argocd_image_updater.registry.credentials.providers import (
    EndpointCredentials,
    ImageCredentials,
    auto_detected_credentials,
)
from argocd_image_updater.registry.credentials.scripts import DEFAULT_EXT_TIMEOUT, run_script

__all__ = [
    "DEFAULT_EXT_TIMEOUT",
    "CredentialsError",
    "EndpointCredentials",
    "ImageCredentials",
    "auto_detected_credentials",
    "fetch_credentials",
    "run_script",
]
