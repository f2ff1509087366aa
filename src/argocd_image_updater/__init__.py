"""argocd-image-updater: keep the container images of Argo CD Applications up to date."""

__version__ = "0.1.0"
