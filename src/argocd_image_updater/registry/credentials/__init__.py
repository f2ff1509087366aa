"""Fetching registry credentials: what a reference (:mod:`argocd_image_updater.config.
credentials`) points to, read from the environment, an ``ext:`` script, a Secret or a cloud login.

* ``fetch`` — :func:`fetch_credentials`, one read of one reference;
* ``scripts`` — running ``ext:`` scripts;
* ``providers`` — the scan's credential providers: single flight, ``credsexpire`` caching,
  refetch after a refusal, auto-detected cloud logins;
* ``errors`` — :class:`CredentialsError`.

The names below are imported on first use, so that a command reaching only for
:class:`CredentialsError` (``test`` against an anonymous registry) loads none of the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from argocd_image_updater.registry.credentials.errors import CredentialsError
    from argocd_image_updater.registry.credentials.fetch import fetch_credentials
    from argocd_image_updater.registry.credentials.providers import (
        EndpointCredentials,
        ImageCredentials,
        auto_detected_credentials,
    )
    from argocd_image_updater.registry.credentials.scripts import DEFAULT_EXT_TIMEOUT, run_script

_MODULE_OF: Final = {
    "CredentialsError": "errors",
    "fetch_credentials": "fetch",
    "EndpointCredentials": "providers",
    "ImageCredentials": "providers",
    "auto_detected_credentials": "providers",
    "DEFAULT_EXT_TIMEOUT": "scripts",
    "run_script": "scripts",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_EXT_TIMEOUT",
    "CredentialsError",
    "EndpointCredentials",
    "ImageCredentials",
    "auto_detected_credentials",
    "fetch_credentials",
    "run_script",
]
