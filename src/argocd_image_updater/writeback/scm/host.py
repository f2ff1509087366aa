"""What every pull/merge request host's client offers: the request value and the protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, Self

from argocd_image_updater.model.pr_hosts import PullRequestHost
from argocd_image_updater.model.repo_url import RepoLocation


@dataclass(frozen=True, slots=True)
class PullRequest:
    """An open or closed pull/merge request.

    ``number`` is GitHub's PR number or GitLab's MR ``iid``; ``url`` its web page; ``state`` is
    ``open``, ``closed`` or ``merged`` (GitLab's ``opened`` is reported as ``open``).
    """

    number: int
    url: str
    head: str
    base: str
    title: str
    state: str
    body: str = field(default="", repr=False)
    labels: tuple[str, ...] = ()


class PullRequestClient(Protocol):
    """One hosting service's pull/merge request API."""

    @property
    def host(self) -> PullRequestHost:
        """Which service this is (its name, what it calls a request, how it links to one)."""
        ...

    @property
    def provider(self) -> str:
        """``GitHub`` or ``GitLab``, for messages."""
        ...

    def reference(self, pr: PullRequest) -> str:
        """How the service's markup links to ``pr``: ``#12`` (GitHub), ``!12`` (GitLab)."""
        ...

    async def find_open(self, repo: RepoLocation, head: str, base: str) -> PullRequest | None:
        """The open request from branch ``head`` into ``base`` of ``repo`` (not from a fork)."""
        ...

    async def create(
        self,
        repo: RepoLocation,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: Sequence[str],
    ) -> PullRequest:
        """Open a request; when one is already open for ``head → base``, return that one."""
        ...

    async def update(
        self, repo: RepoLocation, pr: PullRequest, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        """Set title and body and add the missing ``labels`` (labels added by people stay)."""
        ...

    async def list_open_by_prefix(
        self, repo: RepoLocation, base: str, head_prefix: str
    ) -> list[PullRequest]:
        """Open requests into ``base`` whose head branch (in ``repo`` itself) starts with
        ``head_prefix``, across all result pages."""
        ...

    async def close(self, repo: RepoLocation, pr: PullRequest, comment: str) -> None:
        """Comment on ``pr`` (unless ``comment`` is empty), then close it."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP client, when the client made it."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None: ...
