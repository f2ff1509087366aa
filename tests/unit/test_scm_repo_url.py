"""Repository URLs → owner/repository paths and the pull request API base of their host."""

from __future__ import annotations

import pytest

from argocd_image_updater.writeback.scm import (
    RepoLocation,
    RepoUrlError,
    client_for,
    github_api_url,
    gitlab_base_url,
    parse_repo_url,
    project_id,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # HTTPS, with and without .git, trailing slash, credentials, port
        ("https://github.com/org/repo.git", RepoLocation("github.com", "https", "org", "repo")),
        ("https://github.com/org/repo", RepoLocation("github.com", "https", "org", "repo")),
        ("https://github.com/org/repo/", RepoLocation("github.com", "https", "org", "repo")),
        ("https://GitHub.com/Org/Repo.git", RepoLocation("github.com", "https", "Org", "Repo")),
        (
            "https://user:s3cret@github.com/org/repo.git",
            RepoLocation("github.com", "https", "org", "repo"),
        ),
        (
            "https://ghe.example.com:8443/team/app.git",
            RepoLocation("ghe.example.com", "https", "team", "app", 8443),
        ),
        ("http://git.local/team/app", RepoLocation("git.local", "http", "team", "app")),
        ("  https://github.com/org/repo.git\n", RepoLocation("github.com", "https", "org", "repo")),
        # ssh://
        ("ssh://git@github.com/org/repo.git", RepoLocation("github.com", "ssh", "org", "repo")),
        (
            "ssh://git@gitlab.example.com:2222/group/sub/app.git",
            RepoLocation("gitlab.example.com", "ssh", "group/sub", "app", 2222),
        ),
        ("git+ssh://git@github.com/org/repo", RepoLocation("github.com", "ssh", "org", "repo")),
        # scp-style
        ("git@github.com:org/repo.git", RepoLocation("github.com", "ssh", "org", "repo")),
        ("github.com:org/repo", RepoLocation("github.com", "ssh", "org", "repo")),
        ("git@gitlab.com:/group/repo.git", RepoLocation("gitlab.com", "ssh", "group", "repo")),
        # GitLab subgroups
        (
            "https://gitlab.com/group/sub/deeper/project.git",
            RepoLocation("gitlab.com", "https", "group/sub/deeper", "project"),
        ),
        (
            "git@gitlab.com:group/sub/project.git",
            RepoLocation("gitlab.com", "ssh", "group/sub", "project"),
        ),
        # repository names with dots
        (
            "https://github.com/org/my.repo.git",
            RepoLocation("github.com", "https", "org", "my.repo"),
        ),
        ("https://[::1]:3000/org/repo", RepoLocation("[::1]", "https", "org", "repo", 3000)),
    ],
)
def test_parse_repo_url(url: str, expected: RepoLocation) -> None:
    assert parse_repo_url(url) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty"),
        ("https://github.com/repo.git", "no owner/repository path"),
        ("https://github.com/", "no owner/repository path"),
        ("https://github.com", "no owner/repository path"),
        ("git://github.com/org/repo.git", "unsupported repository URL"),
        ("file:///srv/git/repo.git", "unsupported repository URL"),
        ("ftp://example.com/org/repo", "unsupported repository URL"),
        ("/srv/git/org/repo.git", "unsupported repository URL"),
        ("org/repo", "unsupported repository URL"),
        ("https://github.com/org/repo.git?ref=main", "query or a fragment"),
        ("https://github.com/org/repo#readme", "query or a fragment"),
        ("https://github.com/org//repo", "invalid path segment"),
        ("https://github.com/org/../repo", "invalid path segment"),
        ("https://gith_ub.com/org/repo", "invalid host"),
        ("https://github.com:99999/org/repo", "invalid repository URL"),
        ("git@github.com:repo.git", "no owner/repository path"),
    ],
)
def test_invalid_urls_are_rejected_clearly(url: str, message: str) -> None:
    with pytest.raises(RepoUrlError, match=message):
        parse_repo_url(url)


def test_errors_never_repeat_a_password() -> None:
    with pytest.raises(RepoUrlError) as info:
        parse_repo_url("https://user:hunter2-secret@github.com/repo.git")
    assert "hunter2-secret" not in str(info.value)
    assert "user:*****@github.com" in str(info.value)


@pytest.mark.parametrize(
    ("url", "api"),
    [
        ("https://github.com/org/repo.git", "https://api.github.com"),
        ("git@github.com:org/repo.git", "https://api.github.com"),
        ("ssh://git@github.com:22/org/repo.git", "https://api.github.com"),
        ("https://ghe.example.com/org/repo.git", "https://ghe.example.com/api/v3"),
        ("https://ghe.example.com:8443/org/repo.git", "https://ghe.example.com:8443/api/v3"),
        ("http://ghe.internal/org/repo.git", "http://ghe.internal/api/v3"),
        # the SSH port is not the API's
        ("ssh://git@ghe.example.com:2222/org/repo.git", "https://ghe.example.com/api/v3"),
        ("git@ghe.example.com:org/repo.git", "https://ghe.example.com/api/v3"),
    ],
)
def test_github_api_url(url: str, api: str) -> None:
    assert github_api_url(parse_repo_url(url)) == api


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("https://gitlab.com/group/sub/app.git", "https://gitlab.com"),
        ("git@gitlab.com:group/app.git", "https://gitlab.com"),
        ("https://gitlab.example.com/group/app.git", "https://gitlab.example.com"),
        ("https://gitlab.example.com:8443/group/app.git", "https://gitlab.example.com:8443"),
        ("ssh://git@gitlab.example.com:2222/group/app.git", "https://gitlab.example.com"),
        ("http://gitlab.local/group/app.git", "http://gitlab.local"),
    ],
)
def test_gitlab_base_url(url: str, base: str) -> None:
    assert gitlab_base_url(parse_repo_url(url)) == base


def test_gitlab_project_id_encodes_the_full_path() -> None:
    repo = parse_repo_url("git@gitlab.com:group/sub/my.app.git")
    assert repo.full_path == "group/sub/my.app"
    assert project_id(repo) == "group%2Fsub%2Fmy.app"


def test_location_renders_its_web_url() -> None:
    assert str(parse_repo_url("git@gitlab.com:group/sub/app.git")) == (
        "https://gitlab.com/group/sub/app"
    )
    assert str(parse_repo_url("https://ghe.example.com:8443/o/r.git")) == (
        "https://ghe.example.com:8443/o/r"
    )


async def test_client_for_picks_the_provider() -> None:
    repo = parse_repo_url("https://gitlab.com/g/app.git")
    async with client_for("gitlab", repo, "token-value") as gitlab:
        assert gitlab.provider == "GitLab"
    async with client_for("github", repo, "token-value") as github:
        assert github.provider == "GitHub"
    with pytest.raises(ValueError, match="unknown pull request provider"):
        client_for("bitbucket", repo, "token-value")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a token"):
        client_for("github", repo, "")
