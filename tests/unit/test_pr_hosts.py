"""The pull request hosts (``model.pr_hosts``): API bases, well-known hosts, references."""

from __future__ import annotations

import pytest

from argocd_image_updater.model.pr_hosts import (
    GITHUB,
    GITLAB,
    PR_HOST_KEYS,
    PR_HOSTS,
    detect_pr_host,
    normalize_labels,
    one_of,
    pr_host,
)
from argocd_image_updater.model.repo_url import parse_repo_url


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
def test_github_api_base(url: str, api: str) -> None:
    assert GITHUB.api_base(parse_repo_url(url)) == api


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
def test_gitlab_api_base(url: str, base: str) -> None:
    assert GITLAB.api_base(parse_repo_url(url)) == base


def test_hosts_are_found_by_their_key() -> None:
    assert PR_HOST_KEYS == ("github", "gitlab")
    assert [pr_host(key) for key in PR_HOST_KEYS] == list(PR_HOSTS)
    with pytest.raises(
        ValueError, match="unknown pull request provider 'bitbucket': use github or gitlab"
    ):
        pr_host("bitbucket")


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://github.com/org/repo.git", "github"),
        ("git@www.github.com:org/repo.git", "github"),
        ("https://gitlab.com/group/sub/app.git", "gitlab"),
        ("https://GitLab.com/group/app", "gitlab"),
        ("https://ghe.example.com/org/repo.git", None),
        ("https://github.com.evil.example/org/repo.git", None),
    ],
)
def test_well_known_hosts_are_detected(url: str, key: str | None) -> None:
    found = detect_pr_host(parse_repo_url(url))
    assert (found.key if found else None) == key


def test_references_and_names() -> None:
    assert (GITHUB.reference(12), GITLAB.reference(12)) == ("#12", "!12")
    assert (GITHUB.request, GITLAB.request) == ("pull request", "merge request")


@pytest.mark.parametrize(
    ("words", "text"),
    [(("a",), "a"), (("a", "b"), "a or b"), (("a", "b", "c"), "a, b or c")],
)
def test_one_of(words: tuple[str, ...], text: str) -> None:
    assert one_of(words) == text


def test_labels_are_trimmed_without_blanks_and_duplicates() -> None:
    assert normalize_labels([" deps ", "", "auto", "deps", "  "]) == ("deps", "auto")
    assert normalize_labels(None) == ()
