"""The pull/merge request lifecycle of PR mode, on top of any host's client.

:func:`ensure_pull_request` keeps exactly one open request per write branch: it opens the request
for ``head → base`` or refreshes the open one (title, body, labels), then closes our older open
requests for the same target (heads sharing ``supersedes_prefix``) with a "Superseded by" comment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from argocd_image_updater.model.pr_hosts import normalize_labels
from argocd_image_updater.model.repo_url import RepoLocation
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.writeback.scm.errors import ScmError
from argocd_image_updater.writeback.scm.host import PullRequest, PullRequestClient

MAX_TITLE_RUNES: Final = 255
MAX_BODY_RUNES: Final = 65536

log = get_logger("writeback.scm")


class EnsureResult(NamedTuple):
    """What :func:`ensure_pull_request` did: the request, whether it is new, what it closed."""

    pr: PullRequest
    created: bool
    closed: list[PullRequest]


def truncate_runes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` code points (Go runes)."""
    return text if len(text) <= limit else text[:limit]


def _wanted(pr: PullRequest, title: str, body: str, labels: Sequence[str]) -> bool:
    return pr.title == title and pr.body == body and set(labels) <= set(pr.labels)


async def ensure_pull_request(
    client: PullRequestClient,
    repo: RepoLocation,
    head: str,
    base: str,
    title: str,
    body: str,
    labels: Sequence[str],
    supersedes_prefix: str | None = None,
) -> EnsureResult:
    """Open or refresh the request for ``head → base``; close the ones it supersedes.

    The title is cut to 255 runes and the body to 65536 (or the host's own limit: 4000 on Azure
    DevOps); labels are trimmed, blanks and duplicates dropped, and ignored (with a warning) on a
    host whose requests have none (Bitbucket). An open request for the same branches gets the
    new title, body and missing labels (no duplicate is opened). With ``supersedes_prefix``, every other open request into ``base``
    whose head starts with it is closed with the comment ``Superseded by #<n>`` (``!<n>`` on
    GitLab); a failure to close one is logged and leaves it out of ``closed``.
    """
    host = client.host
    title = truncate_runes(title.strip(), MAX_TITLE_RUNES)
    body = truncate_runes(body.strip(), min(MAX_BODY_RUNES, host.max_body_runes))
    if not title:
        raise ValueError("a pull request needs a title")
    wanted_labels = normalize_labels(labels)
    plog = log.bind(repository=repo.full_path, head=head, base=base)
    if wanted_labels and not host.supports_labels:
        plog.warning(
            "%s %ss have no labels: ignoring labels %s",
            host.name,
            host.request,
            ",".join(wanted_labels),
        )
        wanted_labels = ()

    created = False
    pr = await client.find_open(repo, head, base)
    if pr is None:
        pr = await client.create(repo, head, base, title, body, wanted_labels)
        # an "already exists" answer may have handed us an older request: refresh that one
        # (labels are not compared here: GitHub adds them in a second call that may fail)
        created = pr.title == title and pr.body == body
        if created:
            plog.info("Created %s %s", _kind(client), client.reference(pr), pull_request=pr.url)
    if not created and not _wanted(pr, title, body, wanted_labels):
        pr = await client.update(repo, pr, title, body, wanted_labels)
        plog.info("Updated %s %s", _kind(client), client.reference(pr), pull_request=pr.url)
    elif not created:
        plog.debug("%s %s is up to date", _kind(client), client.reference(pr))

    closed: list[PullRequest] = []
    if supersedes_prefix:
        comment = f"Superseded by {client.reference(pr)}"
        for other in await client.list_open_by_prefix(repo, base, supersedes_prefix):
            if other.number == pr.number or other.head == head:
                continue
            try:
                await client.close(repo, other, comment)
            except ScmError as exc:
                plog.warning(
                    "Could not close superseded %s %s: %s",
                    _kind(client),
                    client.reference(other),
                    exc,
                )
                continue
            plog.info(
                "Closed %s %s, superseded by %s",
                _kind(client),
                client.reference(other),
                client.reference(pr),
            )
            closed.append(other)
    return EnsureResult(pr, created, closed)


def _kind(client: PullRequestClient) -> str:
    return client.host.request
