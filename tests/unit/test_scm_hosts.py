"""The client of each pull request host (``writeback.scm.hosts``), and the request path they
share (``writeback.scm.api``) against an ``httpx.MockTransport``: which URL each host asks,
with which token header, and how failures read."""

from __future__ import annotations

import base64
import logging

import httpx
import pytest

from argocd_image_updater.model.pr_hosts import PR_HOST_KEYS
from argocd_image_updater.writeback.scm import (
    ScmAuthError,
    ScmError,
    ScmNotFoundError,
    ScmRateLimitError,
    client_for,
    parse_repo_url,
    project_id,
)
from argocd_image_updater.writeback.scm.hosts import clients


def test_gitlab_project_id_encodes_the_full_path() -> None:
    repo = parse_repo_url("git@gitlab.com:group/sub/my.app.git")
    assert repo.full_path == "group/sub/my.app"
    assert project_id(repo) == "group%2Fsub%2Fmy.app"


async def test_client_for_picks_the_provider() -> None:
    repo = parse_repo_url("https://gitlab.com/g/app.git")
    async with client_for("gitlab", repo, "token-value") as gitlab:
        assert gitlab.provider == "GitLab"
    async with client_for("github", repo, "token-value") as github:
        assert github.provider == "GitHub"
    with pytest.raises(ValueError, match="unknown pull request provider"):
        client_for("gerrit", repo, "token-value")
    with pytest.raises(ValueError, match="needs a token"):
        client_for("github", repo, "")


def test_every_host_has_a_client() -> None:
    assert tuple(clients()) == PR_HOST_KEYS


def _recording(answer: httpx.Response) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


@pytest.mark.parametrize(
    ("provider", "url", "api_url", "asked", "header"),
    [
        (
            "github",
            "https://github.com/org/deploy.git",
            None,
            "https://api.github.com/repos/org/deploy/pulls",
            ("authorization", "Bearer tok-1"),
        ),
        (
            "github",
            "git@ghe.example.com:org/deploy.git",
            None,
            "https://ghe.example.com/api/v3/repos/org/deploy/pulls",
            ("authorization", "Bearer tok-1"),
        ),
        (
            "gitlab",
            "https://gitlab.example.com:8443/group/sub/app.git",
            None,
            "https://gitlab.example.com:8443/api/v4/projects/group%2Fsub%2Fapp/merge_requests",
            ("private-token", "tok-1"),
        ),
        (
            "gitlab",
            "https://gitlab.com/group/app.git",
            "http://gitlab.internal:8080/",
            "http://gitlab.internal:8080/api/v4/projects/group%2Fapp/merge_requests",
            ("private-token", "tok-1"),
        ),
        (
            "gitea",
            "git@gitea.example.com:org/deploy.git",
            None,
            "https://gitea.example.com/api/v1/repos/org/deploy/pulls",
            ("authorization", "token tok-1"),
        ),
        (
            "gitea",
            "https://git.example.com/org/deploy.git",
            "https://git.example.com/gitea/api/v1",
            "https://git.example.com/gitea/api/v1/repos/org/deploy/pulls",
            ("authorization", "token tok-1"),
        ),
        (
            "bitbucket",
            "git@bitbucket.org:team/deploy.git",
            None,
            "https://api.bitbucket.org/2.0/repositories/team/deploy/pullrequests",
            ("authorization", "Bearer tok-1"),
        ),
        (
            "bitbucketServer",
            "https://git.example.com/bitbucket/scm/PLAT/deploy.git",
            None,
            "https://git.example.com/bitbucket/rest/api/1.0/projects/PLAT/repos/deploy/pull-requests",
            ("authorization", "Bearer tok-1"),
        ),
        (
            "azureDevOps",
            "git@ssh.dev.azure.com:v3/contoso/Platform/deploy",
            None,
            "https://dev.azure.com/contoso/Platform/_apis/git/repositories/deploy/pullrequests",
            ("authorization", f"Basic {base64.b64encode(b':tok-1').decode()}"),
        ),
    ],
)
async def test_each_host_asks_its_api_with_its_token_header(
    provider: str, url: str, api_url: str | None, asked: str, header: tuple[str, str]
) -> None:
    empty = {"bitbucket": {"values": []}, "bitbucketServer": {"values": [], "isLastPage": True}}
    http, seen = _recording(
        httpx.Response(
            200, json=empty.get(provider, {"value": []} if provider == "azureDevOps" else [])
        )
    )
    async with (
        http,
        client_for(provider, parse_repo_url(url), "tok-1", api_url=api_url, http=http) as client,
    ):
        assert await client.find_open(parse_repo_url(url), "head", "main") is None
    assert str(seen[0].url).split("?", 1)[0] == asked
    assert seen[0].headers[header[0]] == header[1]


@pytest.mark.parametrize(
    ("answer", "error", "text"),
    [
        (
            httpx.Response(401, json={"message": "Bad credentials"}),
            ScmAuthError,
            "authentication failed (401 Bad credentials); check the token",
        ),
        (
            httpx.Response(403, json={"message": "Resource not accessible"}),
            ScmAuthError,
            "permission denied",
        ),
        (
            httpx.Response(404, json={"message": "Not Found"}),
            ScmNotFoundError,
            "not found (404 Not Found)",
        ),
        (
            httpx.Response(
                403,
                headers={"x-ratelimit-remaining": "0", "retry-after": "30"},
                json={"message": "API rate limit exceeded"},
            ),
            ScmRateLimitError,
            "rate limit exceeded (403 API rate limit exceeded); retry in 30 s",
        ),
        (
            httpx.Response(500, text="boom"),
            ScmError,
            "GitHub API GET /repos/org/deploy/pulls: 500 boom",
        ),
    ],
)
async def test_failures_name_the_host_method_and_path_never_the_token(
    answer: httpx.Response, error: type[ScmError], text: str
) -> None:
    repo = parse_repo_url("https://github.com/org/deploy.git")
    http, _ = _recording(answer)
    async with http, client_for("github", repo, "secret-tok", http=http) as client:
        with pytest.raises(error) as info:
            await client.find_open(repo, "head", "main")
    assert text in str(info.value)
    assert "secret-tok" not in str(info.value)


async def test_a_repository_on_another_hosts_public_instance_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="argocd_image_updater")
    repo = parse_repo_url("https://github.com/org/deploy.git")
    async with client_for("gitlab", repo, "tok"):
        pass
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("github.com (GitHub) but gitConfig.pullRequest selects gitlab" in m for m in warned)
    caplog.clear()
    async with client_for("github", repo, "tok"):
        pass
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


async def test_bitbucket_app_passwords_go_as_basic_credentials_access_tokens_as_bearer() -> None:
    repo = parse_repo_url("https://bitbucket.org/team/deploy.git")
    for username, header in [
        ("jdoe", f"Basic {base64.b64encode(b'jdoe:app-pass').decode()}"),
        ("x-token-auth", "Bearer app-pass"),
        ("", "Bearer app-pass"),
    ]:
        http, seen = _recording(httpx.Response(200, json={"values": []}))
        async with http:
            client = client_for("bitbucket", repo, "app-pass", http=http, username=username)
            await client.find_open(repo, "head", "main")
        assert seen[0].headers["authorization"] == header
        query = seen[0].url.params
        assert query["state"] == "OPEN"
        assert query["q"] == 'source.branch.name = "head" AND destination.branch.name = "main"'


async def test_azure_devops_names_the_api_version_and_the_branches_as_refs() -> None:
    repo = parse_repo_url("https://dev.azure.com/contoso/Platform/_git/deploy")
    http, seen = _recording(httpx.Response(200, json={"value": [], "count": 0}))
    async with http:
        await client_for("azureDevOps", repo, "pat", http=http).find_open(repo, "up-1", "main")
    params = seen[0].url.params
    assert params["api-version"] == "7.1"
    assert params["searchCriteria.status"] == "active"
    assert params["searchCriteria.sourceRefName"] == "refs/heads/up-1"
    assert params["searchCriteria.targetRefName"] == "refs/heads/main"


# Each host's error shapes, read without the token.
_HOST_ERRORS = [
    (
        "gitea",
        "https://gitea.example.com/org/deploy.git",
        httpx.Response(401, json={"message": "token is required", "url": "https://x/api/swagger"}),
        ScmAuthError,
        "Gitea API GET /api/v1/repos/org/deploy/pulls: authentication failed (401 token is required)",
    ),
    (
        "gitea",
        "https://gitea.example.com/org/deploy.git",
        httpx.Response(404, json={"errors": [], "message": "The target couldn't be found."}),
        ScmNotFoundError,
        "not found (404 The target couldn't be found.)",
    ),
    (
        "bitbucket",
        "https://bitbucket.org/team/deploy.git",
        httpx.Response(
            404,
            json={"type": "error", "error": {"message": "Repository not found", "detail": "x"}},
        ),
        ScmNotFoundError,
        "Bitbucket Cloud API GET /2.0/repositories/team/deploy/pullrequests: not found "
        "(404 Repository not found; x)",
    ),
    (
        "bitbucket",
        "https://bitbucket.org/team/deploy.git",
        httpx.Response(
            429,
            headers={"retry-after": "12"},
            json={"type": "error", "error": {"message": "Rate limit exceeded"}},
        ),
        ScmRateLimitError,
        "rate limit exceeded (429 Rate limit exceeded); retry in 12 s",
    ),
    (
        "bitbucketServer",
        "https://bb.example.com/scm/PLAT/deploy.git",
        httpx.Response(
            401,
            json={
                "errors": [
                    {
                        "context": None,
                        "message": "Authentication failed. Please check your credentials.",
                        "exceptionName": "com.atlassian.bitbucket.auth."
                        "IncorrectPasswordAuthenticationException",
                    }
                ]
            },
        ),
        ScmAuthError,
        "authentication failed (401 Authentication failed. Please check your credentials.)",
    ),
    (
        "azureDevOps",
        "https://dev.azure.com/contoso/Platform/_git/deploy",
        httpx.Response(
            404,
            json={
                "$id": "1",
                "message": "TF401019: The Git repository with name or identifier deploy does "
                "not exist",
                "typeKey": "GitRepositoryNotFoundException",
            },
        ),
        ScmNotFoundError,
        "not found (404 TF401019: The Git repository",
    ),
    (
        "azureDevOps",
        "https://dev.azure.com/contoso/Platform/_git/deploy",
        httpx.Response(203, text="<html>Sign In</html>", headers={"content-type": "text/html"}),
        ScmAuthError,
        "authentication failed (203 sign-in page)",
    ),
]


@pytest.mark.parametrize(("provider", "url", "answer", "error", "text"), _HOST_ERRORS)
async def test_each_hosts_errors_read_without_the_token(
    provider: str, url: str, answer: httpx.Response, error: type[ScmError], text: str
) -> None:
    repo = parse_repo_url(url)
    http, _ = _recording(answer)
    async with http, client_for(provider, repo, "secret-tok", http=http, username="u") as client:
        with pytest.raises(error) as info:
            await client.find_open(repo, "head", "main")
    assert text in str(info.value)
    assert "secret-tok" not in str(info.value)
    assert base64.b64encode(b"u:secret-tok").decode() not in str(info.value)
