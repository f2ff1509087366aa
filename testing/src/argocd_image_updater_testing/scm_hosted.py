"""What the Gitea, Bitbucket Cloud, Bitbucket Data Center and Azure DevOps API stand-ins share:
repositories with their pull requests in memory, optionally backed by real bare repositories
(``git_root``: ``<root>/<path>.git``) whose branches decide what a create may open and where the
merge button lands a change.

Each host's module (``scm_gitea``, ``scm_bitbucket``, ``scm_bitbucket_server``,
``scm_azure_devops``) routes that host's documented REST requests and answers in its documented
shapes; the request log, forced answers (:meth:`fail_next`) and the HTTP server come from
:class:`~argocd_image_updater_testing.scm._ScmFake`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from argocd_image_updater_testing.git_servers import (
    branch_commit,
    commits_between,
    delete_branch,
    merge_branch,
)
from argocd_image_updater_testing.scm import _now, _ScmFake


@dataclass(slots=True)
class HostedPull:
    """A pull request of one of the fakes: ``state`` is ``open``, ``closed`` or ``merged``;
    ``fork`` names the repository of a head branch in a fork (``None``: the repository itself);
    ``version`` counts its updates (Bitbucket Data Center's optimistic locking)."""

    repo: str
    number: int
    title: str
    body: str
    head: str
    base: str
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    fork: str | None = None
    version: int = 0
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    closed_at: str | None = None

    def touch(self) -> None:
        self.updated_at = _now()
        self.version += 1


@dataclass(slots=True)
class HostedRepo:
    """A repository: ``path`` as the host spells it (``owner/name``, ``PROJECT/slug``,
    ``org/project/repo``); ``labels`` are those defined in it (``None``: any name is one)."""

    path: str
    id: int
    labels: list[str] | None = None
    pulls: dict[int, HostedPull] = field(default_factory=dict)
    next_number: int = 1
    git_dir: Path | None = None


class HostedFake(_ScmFake):
    """Repositories, their pull requests and their git directories; a subclass routes."""

    def __init__(
        self,
        *,
        tokens: Collection[str] = (),
        repos: Iterable[str] = (),
        page_size_cap: int = 100,
        git_root: Path | str | None = None,
    ) -> None:
        super().__init__(tokens, page_size_cap, git_root)
        self._repos: dict[str, HostedRepo] = {}
        for path in repos:
            self.add_repo(path)

    def add_repo(
        self,
        path: str,
        *,
        labels: Iterable[str] | None = None,
        git_dir: Path | str | None = None,
    ) -> HostedRepo:
        """Add a repository; with a ``git_dir`` (or one under ``git_root``) its branches decide
        what a pull request may be opened for."""
        repo = HostedRepo(
            path,
            len(self._repos) + 1,
            list(labels) if labels is not None else None,
            git_dir=self._git_dir(path, git_dir),
        )
        self._repos[path.lower()] = repo
        return repo

    def repo(self, path: str) -> HostedRepo | None:
        return self._repos.get(path.lower())

    def pulls(self, path: str) -> list[HostedPull]:
        """Every pull request of a repository, oldest first."""
        return list(self._repos[path.lower()].pulls.values())

    def pull(self, path: str, number: int) -> HostedPull:
        return self._repos[path.lower()].pulls[number]

    def add_pull(
        self,
        path: str,
        head: str,
        base: str,
        title: str,
        *,
        body: str = "",
        labels: Iterable[str] = (),
        fork: str | None = None,
        state: str = "open",
    ) -> HostedPull:
        """Seed a pull request (``fork``: its head branch lives in that other repository)."""
        repo = self._repos[path.lower()]
        pull = HostedPull(
            repo.path,
            repo.next_number,
            title,
            body,
            head,
            base,
            state=state,
            labels=list(labels),
            fork=fork,
        )
        repo.pulls[pull.number] = pull
        repo.next_number += 1
        return pull

    def open_pull(self, repo: HostedRepo, head: str, base: str) -> HostedPull | None:
        """The open pull request of ``head`` (in the repository itself) into ``base``."""
        return next(
            (
                p
                for p in repo.pulls.values()
                if p.state == "open" and p.fork is None and p.head == head and p.base == base
            ),
            None,
        )

    def missing_branch(self, repo: HostedRepo, *branches: str) -> str | None:
        """The first of ``branches`` the repository's git directory lacks, if it has one."""
        if repo.git_dir is None:
            return None
        return next((b for b in branches if branch_commit(repo.git_dir, b) is None), None)

    def nothing_to_merge(self, repo: HostedRepo, base: str, head: str) -> bool:
        """Whether ``head`` has no commit ``base`` lacks (known only with a git directory)."""
        return repo.git_dir is not None and commits_between(repo.git_dir, base, head) == 0

    def merge_pull(
        self, path: str, number: int, *, squash: bool = False, delete_head: bool = False
    ) -> HostedPull:
        """Merge an open pull request as the host's merge button does, in the repository's git
        directory; ``delete_head`` also deletes the head branch."""
        repo = self._repos[path.lower()]
        pull = repo.pulls[number]
        if pull.state != "open" or repo.git_dir is None:
            raise ValueError(f"pull request {number} is not open or has no git repository")
        message = pull.title if squash else f"Merge pull request #{number} from {pull.head}"
        merge_branch(repo.git_dir, pull.base, pull.head, message=message, squash=squash)
        if delete_head:
            delete_branch(repo.git_dir, pull.head)
        pull.state, pull.closed_at = "merged", _now()
        pull.touch()
        return pull
