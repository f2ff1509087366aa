"""The pull request API base of a repository's host, and the client of each host."""

from __future__ import annotations

import pytest

from argocd_image_updater.writeback.scm import (
    client_for,
    github_api_url,
    gitlab_base_url,
    parse_repo_url,
    project_id,
)


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
