"""The error of every Kubernetes API call, importable without loading the client library
(local mode and ``test`` handle it without ever talking to a cluster)."""

from __future__ import annotations


class KubeError(Exception):
    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason

    @property
    def is_conflict(self) -> bool:
        return self.status == 409

    @property
    def is_not_found(self) -> bool:
        return self.status == 404


class KubeConfigError(Exception):
    """The kubeconfig or the in-cluster configuration cannot be used (the message says why)."""
