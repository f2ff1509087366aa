"""Fetch a synced revision the shallow clone lacks (ship tracking's ancestry question).

Argo CD may report a revision the updater's clone never fetched (someone pushed on top of our
commit, the clone cache is new after a restart). The ship tracker then asks, once per revision,
for that commit with its history back to about when the change was written
(``--shallow-since``), so that the clone can tell whether the pushed commit is in it, instead of
waiting for the ship timeout.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from datetime import datetime
from typing import Final

from argocd_image_updater.writeback.git.credentials import GitCredentialsResolver
from argocd_image_updater.writeback.git.repo import RepoCache

_REMEMBERED: Final = 10_000
"""Revisions fetched that are remembered (each is fetched once)."""


class RevisionFetcher:
    """:class:`~argocd_image_updater.pipeline.ports.RevisionFetcher` over the clone cache."""

    def __init__(self, cache: RepoCache, credentials: GitCredentialsResolver) -> None:
        self._cache = cache
        self._credentials = credentials
        self._fetched: OrderedDict[tuple[str, str], None] = OrderedDict()

    async def fetch_revisions(
        self,
        repo_url: str,
        revisions: Collection[str],
        since: datetime,
        credentials_ref: str,
        namespace: str,
    ) -> None:
        wanted = [r for r in dict.fromkeys(revisions) if (repo_url, r) not in self._fetched]
        if not wanted:
            return
        for revision in wanted:  # once, whether or not the fetch succeeds
            self._fetched[(repo_url, revision)] = None
        while len(self._fetched) > _REMEMBERED:
            self._fetched.popitem(last=False)
        creds = await self._credentials.resolve(credentials_ref, repo_url, namespace)
        async with self._cache.checkout(repo_url, creds, branch=None) as work:
            await work.fetch_history(wanted, since)
