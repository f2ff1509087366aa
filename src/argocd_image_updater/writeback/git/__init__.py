"""Git plumbing for the ``git`` write-back method: the git CLI as async subprocesses
(:mod:`.process`), credentials handed over without touching argv, URLs or config (:mod:`.auth`),
and a cache of local clones with safe commit and push (:mod:`.repo`)."""

from __future__ import annotations

from argocd_image_updater.writeback.git.auth import (
    GitCredentials,
    HttpsCredentials,
    NoCredentials,
    SshCredentials,
    SshOptions,
    TlsOptions,
    prepare_auth,
)
from argocd_image_updater.writeback.git.process import (
    GitAuthError,
    GitError,
    GitHostKeyError,
    GitResult,
    GitTimeout,
    GitTlsError,
    run_git,
)
from argocd_image_updater.writeback.git.repo import (
    BranchNotFound,
    PushDenied,
    PushRejected,
    RepoCache,
    Timeouts,
    WorkTree,
)

__all__ = [
    "BranchNotFound",
    "GitAuthError",
    "GitCredentials",
    "GitError",
    "GitHostKeyError",
    "GitResult",
    "GitTimeout",
    "GitTlsError",
    "HttpsCredentials",
    "NoCredentials",
    "PushDenied",
    "PushRejected",
    "RepoCache",
    "SshCredentials",
    "SshOptions",
    "Timeouts",
    "TlsOptions",
    "WorkTree",
    "prepare_auth",
    "run_git",
]
