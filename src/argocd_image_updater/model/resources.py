"""The custom resources the updater reads and writes: (group, version, plural)."""

from __future__ import annotations

from typing import Final

APPLICATIONS: Final = ("argoproj.io", "v1alpha1", "applications")
IMAGE_UPDATERS: Final = ("argocd-image-updater.argoproj.io", "v1alpha1", "imageupdaters")
