"""The ``/repos/{owner}/{repo}`` pull request API that GitHub and Gitea share: repository
URLs, updating a request (title and body, then the missing labels) and closing it (an issue
comment, then ``state: closed``). Each host keeps its API base, its request objects and how it
adds labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.writeback.scm.api import HttpApiClient
from argocd_image_updater.writeback.scm.errors import ScmError
from argocd_image_updater.writeback.scm.host import PullRequest

log = get_logger("writeback.scm")


def label_names(items: Any) -> tuple[str, ...]:
    """The ``name`` of each label object of a JSON list (anything else names none)."""
    return tuple(
        str(label["name"])
        for label in (items if isinstance(items, list) else ())
        if isinstance(label, Mapping) and "name" in label
    )


class ReposApiClient(HttpApiClient):
    """A host whose pull requests live under ``<API base>/repos/{owner}/{repo}/pulls`` and
    whose comments and labels under ``…/issues/{number}``."""

    def _api_base(self, repo: RepoLocation) -> str:
        """The API base that serves ``repo``."""
        raise NotImplementedError

    merged_key: ClassVar[str]
    """The field set on a merged request (``merged_at`` on GitHub, ``merged`` on Gitea)."""

    def _pull(self, data: Any) -> PullRequest:
        """The request a JSON pull request object describes."""
        try:
            state = str(data["state"])
            if state == "closed" and data.get(self.merged_key):
                state = "merged"
            return PullRequest(
                number=int(data["number"]),
                url=str(data["html_url"]),
                head=str(data["head"]["ref"]),
                base=str(data["base"]["ref"]),
                title=str(data.get("title") or ""),
                state=state,
                body=str(data.get("body") or ""),
                labels=label_names(data.get("labels")),
            )
        except (KeyError, TypeError, ValueError):
            raise ScmError(
                f"{self.provider} API: unexpected pull request object in the answer"
            ) from None

    def _labelled(
        self, repo: RepoLocation, pr: PullRequest, added: Sequence[str], names: tuple[str, ...]
    ) -> PullRequest:
        """``pr`` after ``added`` were sent, given the ``names`` the host answered with."""
        raise NotImplementedError

    async def _add_labels(
        self, repo: RepoLocation, pr: PullRequest, labels: Sequence[str]
    ) -> PullRequest:
        """``pr`` with the missing ``labels`` added (a failure is logged, not raised)."""
        missing = [label for label in labels if label not in pr.labels]
        if not missing:
            return pr
        url = f"{self._repo_url(repo)}/issues/{pr.number}/labels"
        try:
            response = await self._request("POST", url, json={"labels": missing})
            names = label_names(self._json(response))
        except ScmError as exc:
            log.warning(
                "Could not add labels to pull request #%d: %s",
                pr.number,
                exc,
                repository=repo.full_path,
                labels=",".join(missing),
            )
            return pr
        return self._labelled(repo, pr, missing, names)

    def _repo_url(self, repo: RepoLocation) -> str:
        if "/" in repo.owner_path:
            raise ScmError(
                f"{self.provider} repositories are owner/repo, not '{repo.full_path}' (nested "
                "paths are a GitLab feature)"
            )
        return f"{self._api_base(repo)}/repos/{repo.owner_path}/{repo.name}"

    async def update(
        self, repo: RepoLocation, pr: PullRequest, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        url = f"{self._repo_url(repo)}/pulls/{pr.number}"
        response = await self._request("PATCH", url, json={"title": title, "body": body})
        return await self._add_labels(repo, self._pull(self._json(response)), labels)

    async def close(self, repo: RepoLocation, pr: PullRequest, comment: str) -> None:
        if comment:
            url = f"{self._repo_url(repo)}/issues/{pr.number}/comments"
            await self._request("POST", url, json={"body": comment})
        await self._request(
            "PATCH", f"{self._repo_url(repo)}/pulls/{pr.number}", json={"state": "closed"}
        )
