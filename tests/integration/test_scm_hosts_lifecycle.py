"""The pull request lifecycle on Gitea, Bitbucket Cloud, Bitbucket Data Center and Azure DevOps:
the real clients (chosen by their ``gitConfig.pullRequest`` key) against each host's API
stand-in over HTTP, with the same cases as GitHub's and GitLab's — one open request per target,
refreshed when a newer change comes, superseded ones closed with a comment, labels where the host
has them, title/body limits, "already exists" answers, and each host's error shapes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from argocd_image_updater.model.pr_hosts import pr_host
from argocd_image_updater.writeback.scm import (
    PullRequestClient,
    ScmAuthError,
    ScmError,
    ScmNotFoundError,
    ScmRateLimitError,
    client_for,
    ensure_pull_request,
    parse_repo_url,
)
from argocd_image_updater_testing.git_servers import bare_repo, branch_commit, git, show
from argocd_image_updater_testing.scm_azure_devops import AzureDevOpsFake
from argocd_image_updater_testing.scm_bitbucket import BitbucketCloudFake
from argocd_image_updater_testing.scm_bitbucket_server import BitbucketServerFake
from argocd_image_updater_testing.scm_gitea import GiteaFake
from argocd_image_updater_testing.scm_hosted import HostedFake

PREFIX = "image-updater-1a2b3c4d-"


@dataclass(frozen=True)
class Host:
    """How one host is set up: its fake, the repository (as the fake and as a clone URL), the
    credentials, and where its comments and its "already exists" answers go."""

    key: str
    make: Callable[..., HostedFake]
    path: str
    url: str
    token: str
    api: Callable[[Any], str]
    comment_path: str
    wrong_token: str
    username: str = ""
    duplicate_keeps_title: bool = True
    fake_args: dict[str, Any] = field(default_factory=dict)

    @property
    def repo(self) -> Any:
        return parse_repo_url(self.url)


HOSTS = [
    Host(
        key="gitea",
        make=GiteaFake,
        path="org/deploy",
        url="https://gitea.example.com/org/deploy.git",
        token="gt_0123456789abcdefFakeGiteaToken",
        api=lambda fake: fake.api_url,
        comment_path="/comments",
        wrong_token="gt_WrongGiteaTokenMustNotLeak0042",
    ),
    Host(
        key="bitbucket",
        make=BitbucketCloudFake,
        path="team/deploy",
        url="git@bitbucket.org:team/deploy.git",
        token="ATCTT3xFfGN0FakeBitbucketAccessToken",
        api=lambda fake: fake.api_url,
        comment_path="/comments",
        wrong_token="ATCTT3xFfGN0WrongTokenMustNotLeak",
        duplicate_keeps_title=False,
    ),
    Host(
        key="bitbucketServer",
        make=BitbucketServerFake,
        path="PLAT/deploy",
        url="https://git.example.com/bitbucket/scm/PLAT/deploy.git",
        token="BBDC-MzQ0FakeBitbucketDataCenterToken",
        api=lambda fake: fake.api_url,
        comment_path="/comments",
        wrong_token="BBDC-WrongTokenThatMustNotLeak0042",
        fake_args={"context": "/bitbucket"},
    ),
    Host(
        key="azureDevOps",
        make=AzureDevOpsFake,
        path="contoso/Platform/deploy",
        url="https://dev.azure.com/contoso/Platform/_git/deploy",
        token="azdopat0123456789FakePersonalAccessToken",
        api=lambda fake: fake.api_url("contoso/Platform/deploy"),
        comment_path="/threads",
        wrong_token="azdopatWrongTokenThatMustNotLeak0042",
    ),
]


@pytest.fixture(params=HOSTS, ids=[h.key for h in HOSTS])
def host(request: pytest.FixtureRequest) -> Host:
    return request.param  # type: ignore[no-any-return]


def _fake(host: Host, **extra: Any) -> HostedFake:
    return host.make(tokens=[host.token], repos=[host.path], **host.fake_args, **extra)


def _client(host: Host, fake: HostedFake, token: str | None = None) -> PullRequestClient:
    return client_for(
        host.key,
        host.repo,
        token or host.token,
        api_url=host.api(fake),
        username=host.username,
    )


@pytest.fixture
async def fake(host: Host) -> AsyncIterator[HostedFake]:
    async with _fake(host) as running:
        yield running


@pytest.fixture
async def client(host: Host, fake: HostedFake) -> AsyncIterator[PullRequestClient]:
    async with _client(host, fake) as opened:
        yield opened


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logs() -> Iterator[list[logging.LogRecord]]:
    logger = logging.getLogger("argocd_image_updater")
    handler, level = _Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.records
    logger.removeHandler(handler)
    logger.setLevel(level)


def _labels(host: Host, *names: str) -> tuple[str, ...]:
    return names if pr_host(host.key).supports_labels else ()


async def test_create_then_find_open(
    host: Host, fake: HostedFake, client: PullRequestClient
) -> None:
    pr = await client.create(host.repo, "update-1", "main", "build: update", "details", ["deps"])
    assert (pr.number, pr.head, pr.base, pr.state) == (1, "update-1", "main", "open")
    assert pr.labels == _labels(host, "deps")
    assert pr.url.startswith("http://127.0.0.1:") and pr.url.endswith("1")

    found = await client.find_open(host.repo, "update-1", "main")
    assert found == pr
    assert found is not None and found.body == "details"
    assert await client.find_open(host.repo, "update-1", "release") is None
    assert await client.find_open(host.repo, "update-2", "main") is None
    stored = fake.pull(host.path, 1)
    assert (stored.title, stored.body, stored.labels) == (
        "build: update",
        "details",
        list(pr.labels),
    )
    assert all(host.token not in str(r.query) for r in fake.requests)


async def test_create_again_turns_into_the_existing_request(
    host: Host, fake: HostedFake, client: PullRequestClient
) -> None:
    first = await client.create(host.repo, "update-1", "main", "title", "", [])
    again = await client.create(host.repo, "update-1", "main", "other title", "", [])
    assert again.number == first.number
    assert again.title == ("title" if host.duplicate_keeps_title else "other title")
    assert len(fake.pulls(host.path)) == 1
    # the refused create was answered by a lookup, never by a second request
    assert [r.method for r in fake.requests].count("POST") == 2


async def test_ensure_creates_then_updates_without_duplicate(
    host: Host, fake: HostedFake, client: PullRequestClient
) -> None:
    pr, created, closed = await ensure_pull_request(
        client, host.repo, "image-updater-1", "main", "build: v1", "body v1", ["deps"]
    )
    assert created and not closed
    if pr_host(host.key).supports_labels:
        fake.pull(host.path, pr.number).labels.append("needs-review")  # added by a person
    fake.requests.clear()

    pr2, created, closed = await ensure_pull_request(
        client, host.repo, "image-updater-1", "main", "build: v2", "body v2", ["deps", "auto"]
    )
    assert not created and not closed and pr2.number == pr.number
    assert (pr2.title, pr2.body) == ("build: v2", "body v2")
    stored = fake.pulls(host.path)
    assert len(stored) == 1
    assert (stored[0].title, stored[0].body) == ("build: v2", "body v2")
    if pr_host(host.key).supports_labels:
        assert stored[0].labels == ["deps", "needs-review", "auto"]
    else:
        assert stored[0].labels == []
    assert [r.method for r in fake.requests].count("POST") <= 1  # only a label, never a request


async def test_ensure_leaves_an_up_to_date_request_alone(
    host: Host, fake: HostedFake, client: PullRequestClient
) -> None:
    fake.add_pull(host.path, "image-updater-1", "main", "t", body="d", labels=_labels(host, "x"))
    _, created, _ = await ensure_pull_request(
        client, host.repo, "image-updater-1", "main", "t", "d", list(_labels(host, "x"))
    )
    assert not created
    assert {r.method for r in fake.requests} == {"GET"}


async def test_newer_head_closes_the_superseded_request(
    host: Host, fake: HostedFake, client: PullRequestClient
) -> None:
    old, _, _ = await ensure_pull_request(
        client, host.repo, f"{PREFIX}aaa", "main", "build: v1", "", [], supersedes_prefix=PREFIX
    )
    other_target = fake.add_pull(host.path, "image-updater-99999999-x", "main", "other")
    other_base = fake.add_pull(host.path, f"{PREFIX}ccc", "release", "release branch")
    fork = fake.add_pull(host.path, f"{PREFIX}ddd", "main", "fork", fork="someone/deploy")

    new, created, closed = await ensure_pull_request(
        client, host.repo, f"{PREFIX}bbb", "main", "build: v2", "", [], supersedes_prefix=PREFIX
    )
    assert created
    assert [pr.number for pr in closed] == [old.number]
    closed_pull = fake.pull(host.path, old.number)
    assert closed_pull.state == "closed"
    assert closed_pull.comments == [f"Superseded by {pr_host(host.key).reference(new.number)}"]
    assert fake.pull(host.path, new.number).state == "open"
    for untouched in (other_target, other_base, fork):
        assert fake.pull(host.path, untouched.number).state == "open"
        assert fake.pull(host.path, untouched.number).comments == []


async def test_a_failed_close_only_warns(
    host: Host, fake: HostedFake, client: PullRequestClient, logs: list[logging.LogRecord]
) -> None:
    fake.add_pull(host.path, f"{PREFIX}aaa", "main", "old")
    fake.fail_next(403, path_contains=host.comment_path)
    _, created, closed = await ensure_pull_request(
        client, host.repo, f"{PREFIX}bbb", "main", "new", "", [], supersedes_prefix=PREFIX
    )
    assert created and closed == []
    assert fake.pull(host.path, 1).state == "open"
    assert any("Could not close superseded" in r.getMessage() for r in logs)


async def test_labels_are_trimmed_and_deduplicated_or_said_to_be_unsupported(
    host: Host, fake: HostedFake, client: PullRequestClient, logs: list[logging.LogRecord]
) -> None:
    pr, _, _ = await ensure_pull_request(
        client,
        host.repo,
        "image-updater-1",
        "main",
        "title",
        "",
        ["image-update", " automated ", "", "image-update", "  "],
    )
    assert pr.labels == _labels(host, "image-update", "automated")
    assert fake.pull(host.path, pr.number).labels == list(pr.labels)
    unsupported = [r.getMessage() for r in logs if "have no labels" in r.getMessage()]
    if pr_host(host.key).supports_labels:
        assert unsupported == []
    else:
        assert unsupported and "image-update,automated" in unsupported[0]


async def test_title_and_body_are_truncated_in_runes(
    host: Host, fake: HostedFake, client: PullRequestClient
) -> None:
    await ensure_pull_request(
        client, host.repo, "image-updater-1", "main", "é" * 300, "→" * 70000, []
    )
    stored = fake.pull(host.path, 1)
    assert stored.title == "é" * 255
    assert stored.body == "→" * pr_host(host.key).max_body_runes


async def test_bad_token_is_a_clear_error_without_the_token(host: Host, fake: HostedFake) -> None:
    async with _client(host, fake, host.wrong_token) as bad:
        with pytest.raises(ScmAuthError) as info:
            await bad.create(host.repo, "update-1", "main", "title", "", [])
    message = str(info.value)
    assert info.value.status == 401
    assert "authentication failed (401" in message and "check the token" in message
    assert pr_host(host.key).name in message and "POST " in message
    assert host.wrong_token not in message and host.wrong_token not in repr(info.value)
    assert fake.pulls(host.path) == []


async def test_unknown_repository_is_not_found(host: Host, fake: HostedFake) -> None:
    fake.repo(host.path).path = "elsewhere/gone/x"  # type: ignore[union-attr]
    fake._repos = {"elsewhere/gone/x": fake._repos[host.path.lower()]}
    async with _client(host, fake) as opened:
        with pytest.raises(ScmNotFoundError) as info:
            await opened.find_open(host.repo, "x", "main")
    assert info.value.status == 404 and "not found (404" in str(info.value)


async def test_rate_limit_is_a_clear_error(
    host: Host, fake: HostedFake, client: PullRequestClient
) -> None:
    fake.rate_limit_next(reset_in=90)  # type: ignore[attr-defined]
    with pytest.raises(ScmRateLimitError) as info:
        await client.create(host.repo, "update-1", "main", "title", "", [])
    assert info.value.status == 429 and info.value.retry_after == 90
    assert "rate limit exceeded (429" in str(info.value) and "retry in 90 s" in str(info.value)
    assert fake.pulls(host.path) == []


async def test_server_errors_and_bad_answers(
    host: Host, fake: HostedFake, client: PullRequestClient
) -> None:
    fake.fail_next(500)
    with pytest.raises(ScmError) as info:
        await client.find_open(host.repo, "update-1", "main")
    assert info.value.status == 500
    fake.fail_next(200, "<html>maintenance</html>")
    with pytest.raises(ScmError, match="not JSON"):
        await client.find_open(host.repo, "update-1", "main")


async def test_list_open_by_prefix_follows_pages(host: Host) -> None:
    async with _fake(host, page_size_cap=2) as fake:
        for i in range(5):
            fake.add_pull(host.path, f"{PREFIX}{i}", "main", f"pr {i}")
        fake.add_pull(host.path, "feature/x", "main", "someone's work")
        fake.add_pull(host.path, f"{PREFIX}closed", "main", "old", state="closed")
        fake.add_pull(host.path, f"{PREFIX}release", "release", "other base")
        async with _client(host, fake) as opened:
            found = await opened.list_open_by_prefix(host.repo, "main", PREFIX)
    assert sorted(pr.head for pr in found) == [f"{PREFIX}{i}" for i in range(5)]
    gets = fake.calls("GET")
    assert len(gets) >= 3  # at most 2 per page
    assert all(host.token not in str(g.query) for g in gets)


async def test_a_real_repository_decides_and_the_merge_button_lands_the_change(
    host: Host, tmp_path: Path
) -> None:
    """A missing head branch is refused the host's way; a real change opens, and merging it
    lands the change in the base branch (after which no request is open any more)."""
    home = tmp_path / "home"
    home.mkdir()
    git_dir = bare_repo(tmp_path / f"{host.path}.git", files={"a.txt": "1\n"})
    async with _fake(host, git_root=tmp_path) as fake, _client(host, fake) as client:
        with pytest.raises(ScmError) as missing:
            await client.create(host.repo, "update-1", "main", "t", "", [])
        assert missing.value.status in (400, 404)
        assert fake.pulls(host.path) == []

        work = tmp_path / "work"
        git("clone", "-q", str(git_dir), str(work), home=home)
        (work / "b.txt").write_text("new\n")
        git("checkout", "-q", "-b", "update-1", cwd=work, home=home)
        git("add", "b.txt", cwd=work, home=home)
        git(
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@x",
            "commit",
            "-q",
            "-m",
            "b",
            cwd=work,
            home=home,
        )
        git("push", "-q", "origin", "update-1", cwd=work, home=home)

        pr = await client.create(host.repo, "update-1", "main", "t", "", [])
        merged = fake.merge_pull(host.path, pr.number, delete_head=True)
        assert merged.state == "merged"
        assert branch_commit(git_dir, "update-1") is None
        assert show(git_dir, "main", "b.txt", home=home) == "new\n"
        assert await client.find_open(host.repo, "update-1", "main") is None
