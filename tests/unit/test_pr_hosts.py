"""The pull request hosts (``model.pr_hosts``): API bases, well-known hosts, references."""

from __future__ import annotations

import pytest

from argocd_image_updater.model.pr_hosts import (
    AZURE_DEVOPS,
    BITBUCKET,
    BITBUCKET_SERVER,
    GITEA,
    GITHUB,
    GITLAB,
    ONE_HOST_MESSAGE,
    ONE_HOST_RULE,
    PR_HOST_KEYS,
    PR_HOSTS,
    azure_devops_location,
    bitbucket_server_location,
    detect_pr_host,
    normalize_labels,
    one_of,
    pr_host,
)
from argocd_image_updater.model.repo_url import RepoUrlError, parse_repo_url


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


@pytest.mark.parametrize(
    ("url", "api"),
    [
        ("https://gitea.example.com/org/repo.git", "https://gitea.example.com/api/v1"),
        ("https://gitea.example.com:3000/org/repo.git", "https://gitea.example.com:3000/api/v1"),
        ("http://forgejo.local/org/repo", "http://forgejo.local/api/v1"),
        ("git@gitea.example.com:org/repo.git", "https://gitea.example.com/api/v1"),
        ("ssh://git@gitea.example.com:2222/org/repo.git", "https://gitea.example.com/api/v1"),
    ],
)
def test_gitea_api_base(url: str, api: str) -> None:
    assert GITEA.api_base(parse_repo_url(url)) == api


@pytest.mark.parametrize(
    "url",
    [
        "https://bitbucket.org/team/deploy.git",
        "git@bitbucket.org:team/deploy.git",
        "https://user@bitbucket.org/team/deploy.git",
    ],
)
def test_bitbucket_cloud_has_one_api(url: str) -> None:
    assert BITBUCKET.api_base(parse_repo_url(url)) == "https://api.bitbucket.org/2.0"


@pytest.mark.parametrize(
    ("url", "api", "location"),
    [
        (
            "https://bitbucket.example.com/scm/PLAT/deploy.git",
            "https://bitbucket.example.com/rest/api/1.0",
            ("", "PLAT", "deploy"),
        ),
        (
            "https://git.example.com:8443/bitbucket/scm/plat/deploy.git",
            "https://git.example.com:8443/bitbucket/rest/api/1.0",
            ("/bitbucket", "plat", "deploy"),
        ),
        (
            "https://bitbucket.example.com/scm/~jdoe/deploy.git",
            "https://bitbucket.example.com/rest/api/1.0",
            ("", "~jdoe", "deploy"),
        ),
        (
            "ssh://git@bitbucket.example.com:7999/plat/deploy.git",
            "https://bitbucket.example.com/rest/api/1.0",
            ("", "plat", "deploy"),
        ),
        (
            "http://bitbucket.local:7990/scm/PLAT/deploy.git",
            "http://bitbucket.local:7990/rest/api/1.0",
            ("", "PLAT", "deploy"),
        ),
    ],
)
def test_bitbucket_data_center_api_base(url: str, api: str, location: tuple[str, str, str]) -> None:
    repo = parse_repo_url(url)
    assert BITBUCKET_SERVER.api_base(repo) == api
    assert bitbucket_server_location(repo) == location


def test_bitbucket_data_center_refuses_urls_without_project() -> None:
    with pytest.raises(RepoUrlError, match=r"not a Bitbucket Data Center clone URL.*apiURL"):
        BITBUCKET_SERVER.api_base(parse_repo_url("https://bitbucket.example.com/a/b/c/deploy.git"))


@pytest.mark.parametrize(
    ("url", "api"),
    [
        (
            "https://dev.azure.com/contoso/Platform/_git/deploy",
            "https://dev.azure.com/contoso/Platform/_apis/git/repositories/deploy",
        ),
        (
            "https://contoso@dev.azure.com/contoso/Platform/_git/deploy",
            "https://dev.azure.com/contoso/Platform/_apis/git/repositories/deploy",
        ),
        (
            "https://dev.azure.com/contoso/My%20Project/_git/deploy",
            "https://dev.azure.com/contoso/My%20Project/_apis/git/repositories/deploy",
        ),
        (  # a repository named like its project
            "https://dev.azure.com/contoso/_git/deploy",
            "https://dev.azure.com/contoso/deploy/_apis/git/repositories/deploy",
        ),
        (
            "git@ssh.dev.azure.com:v3/contoso/Platform/deploy",
            "https://dev.azure.com/contoso/Platform/_apis/git/repositories/deploy",
        ),
        (
            "https://contoso.visualstudio.com/Platform/_git/deploy",
            "https://dev.azure.com/contoso/Platform/_apis/git/repositories/deploy",
        ),
        (
            "https://contoso.visualstudio.com/DefaultCollection/Platform/_git/deploy",
            "https://dev.azure.com/contoso/Platform/_apis/git/repositories/deploy",
        ),
        (
            "contoso@vs-ssh.visualstudio.com:v3/contoso/Platform/deploy",
            "https://dev.azure.com/contoso/Platform/_apis/git/repositories/deploy",
        ),
        (  # Azure DevOps Server: the collection path is kept
            "https://tfs.example.com/tfs/DefaultCollection/Platform/_git/deploy",
            "https://tfs.example.com/tfs/DefaultCollection/Platform/_apis/git/repositories/deploy",
        ),
    ],
)
def test_azure_devops_api_base(url: str, api: str) -> None:
    assert AZURE_DEVOPS.api_base(parse_repo_url(url)) == api


def test_azure_devops_refuses_urls_without_git_path() -> None:
    with pytest.raises(RepoUrlError, match="not an Azure DevOps repository URL"):
        azure_devops_location(parse_repo_url("https://dev.azure.com/contoso/deploy.git"))


def test_hosts_are_found_by_their_key() -> None:
    assert PR_HOST_KEYS == (
        "github",
        "gitlab",
        "gitea",
        "bitbucket",
        "bitbucketServer",
        "azureDevOps",
    )
    assert [pr_host(key) for key in PR_HOST_KEYS] == list(PR_HOSTS)
    with pytest.raises(
        ValueError,
        match="unknown pull request provider 'gerrit': use github, gitlab, gitea, bitbucket, "
        "bitbucketServer or azureDevOps",
    ):
        pr_host("gerrit")


def test_the_exactly_one_rule_and_message_name_every_host() -> None:
    assert ONE_HOST_MESSAGE == (
        "Exactly one of github, gitlab, gitea, bitbucket, bitbucketServer or azureDevOps must be set"
    )
    assert ONE_HOST_RULE.startswith("(has(self.github) ? 1 : 0) + (has(self.gitlab) ? 1 : 0) + ")
    assert ONE_HOST_RULE.endswith("(has(self.azureDevOps) ? 1 : 0) == 1")
    assert ONE_HOST_RULE.count("has(") == len(PR_HOSTS)


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://github.com/org/repo.git", "github"),
        ("git@www.github.com:org/repo.git", "github"),
        ("https://gitlab.com/group/sub/app.git", "gitlab"),
        ("https://GitLab.com/group/app", "gitlab"),
        ("https://bitbucket.org/team/app.git", "bitbucket"),
        ("git@bitbucket.org:team/app.git", "bitbucket"),
        ("https://dev.azure.com/org/proj/_git/app", "azureDevOps"),
        ("git@ssh.dev.azure.com:v3/org/proj/app", "azureDevOps"),
        ("https://org.visualstudio.com/proj/_git/app", "azureDevOps"),
        ("org@vs-ssh.visualstudio.com:v3/org/proj/app", "azureDevOps"),
        # self-hosted: configured only
        ("https://ghe.example.com/org/repo.git", None),
        ("https://gitea.example.com/org/repo.git", None),
        ("https://bitbucket.example.com/scm/PROJ/repo.git", None),
        ("https://tfs.example.com/tfs/Coll/proj/_git/app", None),
        # look-alikes
        ("https://github.com.evil.example/org/repo.git", None),
        ("https://evilvisualstudio.com/proj/_git/app", None),
        ("https://bitbucket.org.evil.example/team/app.git", None),
    ],
)
def test_well_known_hosts_are_detected(url: str, key: str | None) -> None:
    found = detect_pr_host(parse_repo_url(url))
    assert (found.key if found else None) == key


def test_what_requests_can_hold() -> None:
    assert [h.key for h in PR_HOSTS if not h.supports_labels] == ["bitbucket", "bitbucketServer"]
    assert {h.key: h.max_body_runes for h in PR_HOSTS if h.max_body_runes != 65536} == {
        "azureDevOps": 4000
    }


def test_references_and_names() -> None:
    assert [h.reference(12) for h in PR_HOSTS] == ["#12", "!12", "#12", "#12", "#12", "!12"]
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
