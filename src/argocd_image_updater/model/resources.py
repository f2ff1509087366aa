"""The custom resources the updater reads and writes: (group, version, plural), and the
metadata it reads of them."""

from __future__ import annotations

from typing import Final

APPLICATIONS: Final = ("argoproj.io", "v1alpha1", "applications")
IMAGE_UPDATERS: Final = ("argocd-image-updater.argoproj.io", "v1alpha1", "imageupdaters")

METADATA_READ: Final = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "annotations",
)
"""The ``metadata`` fields kept of a listed Application or ImageUpdater (``managedFields`` and
the rest are left out)."""
