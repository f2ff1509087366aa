"""Git repository URLs (``model.repo_url``): the same repository by Argo CD's rules, credential
templates, and the owner/name path on the hosting service."""

from __future__ import annotations

import pytest

from argocd_image_updater.model.repo_url import (
    RepoLocation,
    RepoUrlError,
    host_of,
    is_ssh_url,
    normalize_git_url,
    owner_and_name,
    parse_repo_url,
    repository_key,
    same_repository,
    template_covers,
)

# --- the same repository ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        # .git suffix, trailing slashes, case (of the whole URL, as Argo CD), blanks
        ("https://github.com/org/repo.git", "https://github.com/org/repo"),
        ("https://github.com/org/repo/", "https://github.com/org/repo"),
        ("https://github.com/org/repo.git/", "https://github.com/org/repo"),
        ("https://GitHub.COM/Org/Repo.git", "https://github.com/org/repo"),
        ("  https://github.com/org/repo\n", "https://github.com/org/repo"),
        # scp-like: the first colon becomes a slash, as ssh:// without the scheme
        ("git@github.com:org/repo.git", "git@github.com/org/repo"),
        ("git@GitHub.com:Org/Repo", "git@github.com/org/repo"),
        ("ssh://git@github.com/org/repo.git", "git@github.com/org/repo"),
        # ssh:// with a port keeps the port
        (
            "ssh://git@gitlab.example.com:2222/group/sub/app.git",
            "git@gitlab.example.com:2222/group/sub/app",
        ),
        # userinfo and ports stay part of the URL
        ("https://user@github.com/org/repo", "https://user@github.com/org/repo"),
        ("https://ghe.example.com:8443/org/repo", "https://ghe.example.com:8443/org/repo"),
        # unparsable
        ("https://github.com:notaport/org/repo", ""),
    ],
)
def test_normalize_git_url(url: str, normalized: str) -> None:
    assert normalize_git_url(url) == normalized


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("https://github.com/Org/Repo.git", "https://github.com/org/repo", True),
        ("https://github.com/org/repo/", "https://github.com/org/repo.git", True),
        ("git@github.com:org/repo.git", "git@github.com:org/repo", True),
        ("git@github.com:org/repo.git", "ssh://git@github.com/org/repo", True),
        ("ssh://git@github.com:22/org/repo", "git@github.com:org/repo", False),
        ("https://github.com/org/repo", "git@github.com:org/repo", False),
        ("https://github.com/org/repo", "http://github.com/org/repo", False),
        ("https://user@github.com/org/repo", "https://github.com/org/repo", False),
        ("https://github.com/org/repo", "https://github.com/org/repo2", False),
        ("", "", False),
    ],
)
def test_same_repository(a: str, b: str, same: bool) -> None:
    assert same_repository(a, b) is same
    assert same_repository(b, a) is same
    if a:
        assert (repository_key(a) == repository_key(b)) is same


def test_repository_key_keeps_an_unparsable_url_as_written() -> None:
    assert repository_key(" https://github.com:x/org/repo ") == "https://github.com:x/org/repo"


@pytest.mark.parametrize(
    ("template", "url", "covers"),
    [
        ("https://github.com/org", "https://github.com/org/repo.git", True),
        ("https://GitHub.com/Org", "https://github.com/org/repo", True),
        ("https://github.com/org/", "https://github.com/org/repo", True),
        ("https://github.com/org/", "https://github.com/org", True),
        ("https://github.com/org/", "https://github.com/organisation/repo", False),
        ("https://github.com/org", "https://github.com/organisation/repo", True),  # Argo CD's
        ("git@github.com:org", "git@github.com:org/repo.git", True),
        ("git@github.com:org", "ssh://git@github.com/org/repo", True),
        ("https://github.com/org", "git@github.com:org/repo", False),
        ("https://gitlab.com/org", "https://github.com/org/repo", False),
        ("", "https://github.com/org/repo", False),
    ],
)
def test_template_covers(template: str, url: str, covers: bool) -> None:
    assert template_covers(template, url) is covers


# --- which credentials a URL takes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "ssh", "host"),
    [
        ("https://github.com/org/repo", False, "github.com"),
        ("https://user:pw@ghe.example.com:8443/org/repo", False, "ghe.example.com"),
        ("ssh://git@gitlab.example.com:2222/g/app", True, "gitlab.example.com"),
        ("git@github.com:org/repo.git", True, "github.com"),
        ("http://git.local/org/repo", False, "git.local"),
    ],
)
def test_ssh_urls_and_hosts(url: str, ssh: bool, host: str) -> None:
    assert is_ssh_url(url) is ssh
    assert host_of(url) == host


# --- where the repository lives on its hosting service -----------------------------------------


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


def test_location_renders_its_web_url() -> None:
    assert str(parse_repo_url("git@gitlab.com:group/sub/app.git")) == (
        "https://gitlab.com/group/sub/app"
    )
    assert str(parse_repo_url("https://ghe.example.com:8443/o/r.git")) == (
        "https://ghe.example.com:8443/o/r"
    )


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/org/repo.git", ("org", "repo")),
        ("git@gitlab.com:group/sub/app.git", ("group/sub", "app")),
        ("ssh://git@ghe.example.com:2222/Team/App/", ("Team", "App")),
    ],
)
def test_owner_and_name(url: str, expected: tuple[str, str]) -> None:
    assert owner_and_name(url) == expected
