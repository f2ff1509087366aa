"""Git plumbing for the ``git`` write-back method: the git CLI as async subprocesses
(:mod:`.process`), credentials handed over without touching argv, URLs or config (:mod:`.auth`),
where they come from (:mod:`.credentials`), a cache of local clones (:mod:`.repo`) handing out work
trees with safe commit and push (:mod:`.worktree`, commits built by :mod:`.commits`), commits in place (:mod:`.inplace`), the batch writer (:mod:`.writer`) and the fetch of revisions ship tracking lacks (:mod:`.fetcher`).

Code outside ``writeback/`` (local mode) uses the names exported here, never the modules."""

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
from argocd_image_updater.writeback.git.clone import BranchNotFound, Timeouts
from argocd_image_updater.writeback.git.commits import atomic_write
from argocd_image_updater.writeback.git.credentials import (
    SECRET_TYPE_LABEL,
    GitCredentialsResolver,
)
from argocd_image_updater.writeback.git.fetcher import RevisionFetcher
from argocd_image_updater.writeback.git.inplace import InPlaceCommit, commit_in_place
from argocd_image_updater.writeback.git.member import WorkFiles
from argocd_image_updater.writeback.git.process import (
    GitAuthError,
    GitError,
    GitHostKeyError,
    GitResult,
    GitTimeout,
    GitTlsError,
    run_git,
)
from argocd_image_updater.writeback.git.repo import RepoCache
from argocd_image_updater.writeback.git.worktree import PushDenied, PushRejected, WorkTree
from argocd_image_updater.writeback.git.writer import CommitSettings, GitBatchWriter

__all__ = [
    "SECRET_TYPE_LABEL",
    "BranchNotFound",
    "CommitSettings",
    "GitAuthError",
    "GitBatchWriter",
    "GitCredentials",
    "GitCredentialsResolver",
    "GitError",
    "GitHostKeyError",
    "GitResult",
    "GitTimeout",
    "GitTlsError",
    "HttpsCredentials",
    "InPlaceCommit",
    "NoCredentials",
    "PushDenied",
    "PushRejected",
    "RepoCache",
    "RevisionFetcher",
    "SshCredentials",
    "SshOptions",
    "Timeouts",
    "TlsOptions",
    "WorkFiles",
    "WorkTree",
    "atomic_write",
    "commit_in_place",
    "prepare_auth",
    "run_git",
]
