"""GitHub pull requests: the real client against the GitHub API stand-in over HTTP."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from argocd_image_updater.writeback.scm import (
    GitHubAppTokenSource,
    GitHubClient,
    RepoLocation,
    ScmAuthError,
    ScmError,
    ScmNotFoundError,
    ScmRateLimitError,
    clear_app_token_cache,
    ensure_pull_request,
    github_app_token,
    parse_repo_url,
)
from argocd_image_updater_testing.scm import GitHubFake

TOKEN = "ghp_Zq8uNrVv4CtY0aFakeTokenForTests0001"
REPO = parse_repo_url("git@github.com:org/deploy.git")
PREFIX = "image-updater-1a2b3c4d-"


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


@pytest.fixture
async def github() -> AsyncIterator[GitHubFake]:
    async with GitHubFake(tokens=[TOKEN], repos=["org/deploy"]) as fake:
        yield fake


@pytest.fixture
async def client(github: GitHubFake) -> AsyncIterator[GitHubClient]:
    async with GitHubClient(TOKEN, api_url=github.api_url) as gh:
        yield gh


async def test_create_then_find_open(github: GitHubFake, client: GitHubClient) -> None:
    pr = await client.create(REPO, "update-1", "main", "build: update", "details", ["deps"])
    assert (pr.number, pr.head, pr.base, pr.state) == (1, "update-1", "main", "open")
    assert pr.url == f"{github.url}/org/deploy/pull/1"
    assert pr.labels == ("deps",)

    found = await client.find_open(REPO, "update-1", "main")
    assert found == pr
    assert found is not None and found.body == "details"
    assert await client.find_open(REPO, "update-1", "release") is None
    assert await client.find_open(REPO, "update-2", "main") is None

    post = github.calls("POST", "/pulls")[0]
    assert post.path == "/repos/org/deploy/pulls"
    assert post.body == {
        "title": "build: update",
        "head": "update-1",
        "base": "main",
        "body": "details",
    }
    assert post.headers["Authorization"] == f"Bearer {TOKEN}"
    assert post.headers["Accept"] == "application/vnd.github+json"
    assert post.headers["X-GitHub-Api-Version"] == "2022-11-28"
    # labels go through the Issues API
    assert github.calls("POST", "/issues/1/labels")[0].body == {"labels": ["deps"]}
    assert github.calls("GET")[0].query["head"] == "org:update-1"
    assert github.pull("org/deploy", 1).labels == ["deps"]


async def test_create_again_turns_into_the_existing_pull_request(
    github: GitHubFake, client: GitHubClient
) -> None:
    first = await client.create(REPO, "update-1", "main", "title", "", [])
    again = await client.create(REPO, "update-1", "main", "other title", "", [])
    assert again.number == first.number
    assert again.title == "title"
    assert len(github.pulls("org/deploy")) == 1
    # the second POST was refused with 422 and answered by a lookup
    assert [r.method for r in github.requests] == ["POST", "POST", "GET"]


async def test_other_validation_failures_are_errors(
    github: GitHubFake, client: GitHubClient
) -> None:
    github.add_repo("org/strict", branches={"main"})
    repo = parse_repo_url("https://github.com/org/strict")
    with pytest.raises(ScmError, match=r"422.*head invalid") as info:
        await client.create(repo, "missing-branch", "main", "title", "", [])
    assert info.value.status == 422


async def test_ensure_creates_then_updates_without_duplicate(
    github: GitHubFake, client: GitHubClient
) -> None:
    pr, created, closed = await ensure_pull_request(
        client, REPO, "image-updater-1", "main", "build: v1", "body v1", ["deps"]
    )
    assert created and not closed
    github.requests.clear()

    pr2, created, closed = await ensure_pull_request(
        client, REPO, "image-updater-1", "main", "build: v2", "body v2", ["deps", "auto"]
    )
    assert not created and not closed
    assert pr2.number == pr.number
    assert (pr2.title, pr2.body, pr2.labels) == ("build: v2", "body v2", ("deps", "auto"))
    stored = github.pulls("org/deploy")
    assert len(stored) == 1
    assert (stored[0].title, stored[0].body, stored[0].labels) == (
        "build: v2",
        "body v2",
        ["deps", "auto"],
    )
    assert github.calls("PATCH")[0].body == {"title": "build: v2", "body": "body v2"}
    # only the missing label is added; labels people added stay
    assert github.calls("POST", "/labels")[0].body == {"labels": ["auto"]}
    assert not github.calls("POST", "/pulls")


async def test_ensure_leaves_an_up_to_date_pull_request_alone(
    github: GitHubFake, client: GitHubClient
) -> None:
    github.add_pull("org/deploy", "image-updater-1", "main", "build: v1", body="b", labels=["x"])
    github.requests.clear()
    pr, created, _ = await ensure_pull_request(
        client, REPO, "image-updater-1", "main", "build: v1", "b", ["x"]
    )
    assert pr.number == 1 and not created
    assert [r.method for r in github.requests] == ["GET"]


async def test_ensure_refreshes_a_pull_request_found_only_by_the_422_answer(
    github: GitHubFake, client: GitHubClient
) -> None:
    github.add_pull("org/deploy", "image-updater-1", "main", "old title")
    github.fail_next(200, [], method="GET")  # a listing that lags behind
    pr, created, _ = await ensure_pull_request(
        client, REPO, "image-updater-1", "main", "new title", "", []
    )
    assert not created
    assert pr.number == 1 and pr.title == "new title"
    assert len(github.pulls("org/deploy")) == 1


async def test_newer_head_closes_the_superseded_pull_request(
    github: GitHubFake, client: GitHubClient
) -> None:
    old, _, _ = await ensure_pull_request(
        client, REPO, f"{PREFIX}aaa", "main", "build: v1", "", [], supersedes_prefix=PREFIX
    )
    other_target = github.add_pull("org/deploy", "image-updater-99999999-x", "main", "other")
    other_base = github.add_pull("org/deploy", f"{PREFIX}ccc", "release", "release branch")
    fork = github.add_pull("org/deploy", f"{PREFIX}ddd", "main", "fork", head_owner="someone")

    new, created, closed = await ensure_pull_request(
        client, REPO, f"{PREFIX}bbb", "main", "build: v2", "", [], supersedes_prefix=PREFIX
    )
    assert created
    assert [pr.number for pr in closed] == [old.number]
    closed_pull = github.pull("org/deploy", old.number)
    assert closed_pull.state == "closed"
    assert closed_pull.comments == [f"Superseded by #{new.number}"]
    assert github.pull("org/deploy", new.number).state == "open"
    for untouched in (other_target, other_base, fork):
        assert github.pull("org/deploy", untouched.number).state == "open"
        assert github.pull("org/deploy", untouched.number).comments == []


async def test_a_failed_close_only_warns(
    github: GitHubFake, client: GitHubClient, logs: list[logging.LogRecord]
) -> None:
    github.add_pull("org/deploy", f"{PREFIX}aaa", "main", "old")
    github.fail_next(403, path_contains="/comments")
    _, created, closed = await ensure_pull_request(
        client, REPO, f"{PREFIX}bbb", "main", "new", "", [], supersedes_prefix=PREFIX
    )
    assert created and closed == []
    assert github.pull("org/deploy", 1).state == "open"
    assert any("Could not close superseded" in r.getMessage() for r in logs)


async def test_labels_are_trimmed_and_deduplicated(
    github: GitHubFake, client: GitHubClient
) -> None:
    pr, _, _ = await ensure_pull_request(
        client,
        REPO,
        "image-updater-1",
        "main",
        "title",
        "",
        ["image-update", " automated ", "", "image-update", "  "],
    )
    assert github.calls("POST", "/labels")[0].body == {"labels": ["image-update", "automated"]}
    assert pr.labels == ("image-update", "automated")


async def test_title_and_body_are_truncated_in_runes(
    github: GitHubFake, client: GitHubClient
) -> None:
    await ensure_pull_request(client, REPO, "image-updater-1", "main", "é" * 300, "→" * 70000, [])
    stored = github.pull("org/deploy", 1)
    assert stored.title == "é" * 255
    assert stored.body == "→" * 65536


async def test_a_label_failure_only_warns(
    github: GitHubFake, client: GitHubClient, logs: list[logging.LogRecord]
) -> None:
    github.fail_next(500, path_contains="/labels")
    pr = await client.create(REPO, "update-1", "main", "title", "", ["deps"])
    assert pr.number == 1 and pr.labels == ()
    warnings = [r for r in logs if r.levelno == logging.WARNING]
    assert warnings and "Could not add labels to pull request #1" in warnings[0].getMessage()


async def test_bad_token_is_a_clear_error_without_the_token(github: GitHubFake) -> None:
    wrong = "ghp_ThisTokenIsWrongAndMustNotLeak0042"
    async with GitHubClient(wrong, api_url=github.api_url) as gh:
        with pytest.raises(ScmAuthError) as info:
            await gh.create(REPO, "update-1", "main", "title", "", [])
    message = str(info.value)
    assert info.value.status == 401
    assert "authentication failed" in message and "Bad credentials" in message
    assert "POST /repos/org/deploy/pulls" in message
    assert wrong not in message and wrong not in repr(info.value)
    assert github.pulls("org/deploy") == []


async def test_forbidden_and_missing_repository(github: GitHubFake, client: GitHubClient) -> None:
    github.fail_next(403, {"message": "Resource not accessible by integration"})
    with pytest.raises(ScmAuthError, match=r"permission denied.*Resource not accessible"):
        await client.find_open(REPO, "x", "main")
    with pytest.raises(ScmNotFoundError, match="404 Not Found"):
        await client.find_open(parse_repo_url("https://github.com/org/nope"), "x", "main")


@pytest.mark.parametrize("secondary", [False, True])
async def test_rate_limit_is_a_clear_error(
    github: GitHubFake, client: GitHubClient, secondary: bool
) -> None:
    github.rate_limit_next(reset_in=120, secondary=secondary)
    with pytest.raises(ScmRateLimitError) as info:
        await client.find_open(REPO, "update-1", "main")
    assert "rate limit exceeded" in str(info.value)
    assert info.value.status == 403
    assert info.value.retry_after is not None and 100 <= info.value.retry_after <= 120


async def test_a_plain_403_is_not_a_rate_limit(github: GitHubFake, client: GitHubClient) -> None:
    github.fail_next(403, headers={"x-ratelimit-remaining": "4999"})
    with pytest.raises(ScmAuthError):
        await client.find_open(REPO, "update-1", "main")


async def test_server_errors_and_bad_answers(github: GitHubFake, client: GitHubClient) -> None:
    github.fail_next(502)
    with pytest.raises(ScmError, match="502 Server Error") as info:
        await client.find_open(REPO, "update-1", "main")
    assert info.value.status == 502
    github.fail_next(200, "<html>maintenance</html>")
    with pytest.raises(ScmError, match="not JSON"):
        await client.find_open(REPO, "update-1", "main")


async def test_connection_failure_is_an_scm_error() -> None:
    async with GitHubClient(TOKEN, api_url="http://127.0.0.1:9") as gh:
        with pytest.raises(ScmError, match="request failed"):
            await gh.find_open(REPO, "x", "main")


async def test_list_open_by_prefix_follows_pages() -> None:
    async with GitHubFake(tokens=[TOKEN], repos=["org/deploy"], page_size_cap=2) as github:
        for i in range(5):
            github.add_pull("org/deploy", f"{PREFIX}{i}", "main", f"pr {i}")
        github.add_pull("org/deploy", "feature/x", "main", "someone's work")
        github.add_pull("org/deploy", f"{PREFIX}closed", "main", "old", state="closed")
        github.add_pull("org/deploy", f"{PREFIX}release", "release", "other base")
        async with GitHubClient(TOKEN, api_url=github.api_url) as gh:
            found = await gh.list_open_by_prefix(REPO, "main", PREFIX)
    assert sorted(pr.head for pr in found) == [f"{PREFIX}{i}" for i in range(5)]
    gets = github.calls("GET")
    assert len(gets) == 3  # 6 open pulls into main, 2 per page
    assert gets[0].query["per_page"] == "100" and gets[0].query["base"] == "main"
    assert [g.query.get("page", "1") for g in gets] == ["1", "2", "3"]
    assert all(g.headers["Authorization"] == f"Bearer {TOKEN}" for g in gets)


async def test_next_page_links_to_other_origins_are_not_followed(
    github: GitHubFake, client: GitHubClient
) -> None:
    github.fail_next(200, [], headers={"Link": '<http://elsewhere.test/steal?page=2>; rel="next"'})
    with pytest.raises(ScmError, match="another origin"):
        await client.list_open_by_prefix(REPO, "main", PREFIX)
    assert len(github.requests) == 1


async def test_enterprise_api_base_is_derived_from_the_host() -> None:
    async with GitHubFake(tokens=[TOKEN], repos=["team/app"], enterprise=True) as github:
        repo = RepoLocation("127.0.0.1", "http", "team", "app", github.port)
        async with GitHubClient(TOKEN) as gh:
            pr = await gh.create(repo, "update-1", "main", "title", "", [])
        assert pr.number == 1
        assert github.calls("POST")[0].path == "/api/v3/repos/team/app/pulls"


async def test_nested_owner_paths_are_refused(client: GitHubClient) -> None:
    with pytest.raises(ScmError, match="owner/repo"):
        await client.find_open(parse_repo_url("https://github.com/a/b/c"), "x", "main")


async def test_caller_owned_http_client_is_left_open(github: GitHubFake) -> None:
    async with httpx.AsyncClient() as http:
        async with GitHubClient(TOKEN, api_url=github.api_url, http=http) as gh:
            await gh.find_open(REPO, "x", "main")
        assert not http.is_closed


# --- GitHub App installation tokens ------------------------------------------------------------


def _rsa_pem() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@pytest.fixture(scope="module")
def app_key() -> tuple[str, str]:
    return _rsa_pem()


@pytest.fixture
async def app_github(app_key: tuple[str, str]) -> AsyncIterator[GitHubFake]:
    clear_app_token_cache()
    async with GitHubFake(
        repos=["org/deploy"], apps={123: app_key[1]}, installations={456: 123}
    ) as fake:
        yield fake
    clear_app_token_cache()


async def test_app_installation_token_is_issued_and_cached(
    app_github: GitHubFake, app_key: tuple[str, str]
) -> None:
    now = [1_000_000.0]
    token = await github_app_token(123, 456, app_key[0], app_github.api_url, clock=lambda: now[0])
    assert token == app_github.issued_tokens[0]
    jwt = app_github.requests[0].headers["Authorization"].removeprefix("Bearer ")
    assert app_github.requests[0].path == "/app/installations/456/access_tokens"
    assert jwt.count(".") == 2

    again = await github_app_token(123, 456, app_key[0], app_github.api_url, clock=lambda: now[0])
    assert again == token and len(app_github.requests) == 1


async def test_app_token_is_renewed_shortly_before_expiry(
    app_github: GitHubFake, app_key: tuple[str, str]
) -> None:
    first = await github_app_token(123, 456, app_key[0], app_github.api_url)
    # 10 minutes before the one-hour expiry the cached token is still used …
    later = time.time() + 3600 - 600
    assert (
        await github_app_token(123, 456, app_key[0], app_github.api_url, clock=lambda: later)
        == first
    )
    # … but not within the last 5 minutes
    late = time.time() + 3600 - 120
    app_github.app_token_ttl = 3600
    second = await github_app_token(123, 456, app_key[0], app_github.api_url, clock=lambda: late)
    assert second != first and app_github.issued_tokens == [first, second]


async def test_app_token_source_drives_the_client(
    app_github: GitHubFake, app_key: tuple[str, str]
) -> None:
    source = GitHubAppTokenSource(123, 456, app_key[0], app_github.api_url)
    assert app_key[0] not in repr(source)
    async with GitHubClient(source, api_url=app_github.api_url) as gh:
        pr = await gh.create(REPO, "update-1", "main", "title", "", [])
        await gh.find_open(REPO, "update-1", "main")
    assert pr.number == 1
    assert len(app_github.issued_tokens) == 1
    pulls_calls = app_github.calls(path_contains="/pulls")
    assert all(
        r.headers["Authorization"] == f"Bearer {app_github.issued_tokens[0]}" for r in pulls_calls
    )


async def test_app_token_errors(app_github: GitHubFake, app_key: tuple[str, str]) -> None:
    with pytest.raises(ScmError, match="invalid GitHub App private key") as info:
        await github_app_token(
            123, 456, "-----BEGIN RSA PRIVATE KEY-----\nfoo\n", app_github.api_url
        )
    assert "foo" not in str(info.value)
    ec_key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(ScmError, match="expected an RSA key"):
        await github_app_token(123, 456, ec_key.decode(), app_github.api_url)
    other_key, _ = _rsa_pem()
    with pytest.raises(ScmAuthError, match="JSON web token could not be decoded"):
        await github_app_token(123, 456, other_key, app_github.api_url)
    with pytest.raises(ScmNotFoundError):
        await github_app_token(123, 789, app_key[0], app_github.api_url)
    with pytest.raises(ScmError, match="must be a number"):
        await github_app_token(123, "../456", app_key[0], app_github.api_url)
    assert app_github.issued_tokens == []


async def test_a_token_echoed_by_the_server_is_masked(
    github: GitHubFake, client: GitHubClient
) -> None:
    github.fail_next(401, {"message": f"Bad credentials: {TOKEN}"})
    with pytest.raises(ScmAuthError) as info:
        await client.find_open(REPO, "x", "main")
    assert TOKEN not in str(info.value) and "Bad credentials: *****" in str(info.value)


async def test_branches_of_a_real_repository_decide_whether_a_pull_request_opens(
    tmp_path,
) -> None:
    """Like GitHub: no head branch → ``head invalid``; a head without commits the base lacks
    (merged with a merge commit) → ``No commits between``; after a squash merge the head still
    has its own commit, so GitHub would open a (content-empty) request."""
    from argocd_image_updater_testing.git_servers import bare_repo, branch_commit, push_files

    home = tmp_path / "home"
    home.mkdir()
    git_dir = bare_repo(tmp_path / "org" / "deploy.git", files={"a.txt": "1\n"})
    push_files(git_dir, {"a.txt": "2\n"}, home=home, branch="main")
    async with (
        GitHubFake(tokens=[TOKEN], repos=["org/deploy"], git_root=tmp_path) as github,
        GitHubClient(TOKEN, api_url=github.api_url) as client,
    ):
        with pytest.raises(ScmError, match="PullRequest head invalid") as missing:
            await client.create(REPO, "update-1", "main", "t", "", [])
        assert missing.value.status == 422
        # A branch whose commit is already in main (what a kept head looks like after a merge).
        main = branch_commit(git_dir, "main")
        assert main is not None
        from argocd_image_updater_testing.git_servers import git

        git("--git-dir", str(git_dir), "update-ref", "refs/heads/update-1", main, home=home)
        with pytest.raises(ScmError, match="No commits between main and update-1"):
            await client.create(REPO, "update-1", "main", "t", "", [])
        # A real change on its own branch opens; the merge button lands it.
        git("--git-dir", str(git_dir), "update-ref", "-d", "refs/heads/update-1", home=home)
        push_files(git_dir, {"b.txt": "new\n"}, home=home, branch="main")
        git("--git-dir", str(git_dir), "branch", "update-2", "main", home=home)
        git("--git-dir", str(git_dir), "update-ref", "refs/heads/main", main, home=home)
        pr = await client.create(REPO, "update-2", "main", "t", "", [])
        merged = github.merge_pull("org/deploy", pr.number, squash=True)
        assert merged.state == "merged"
        assert await client.find_open(REPO, "update-2", "main") is None
        assert git("--git-dir", str(git_dir), "show", "main:b.txt", home=home) == "new\n"
        # The squashed head keeps a commit main lacks: GitHub would open a request again.
        again = await client.create(REPO, "update-2", "main", "t", "", [])
        assert again.number == pr.number + 1
