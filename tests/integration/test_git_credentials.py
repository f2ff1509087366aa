"""Which Argo CD repository Secret or credential template the git write-back pushes with: URLs
compare as Argo CD compares them (``model.repo_url``). Secrets come from a directory laid out
like mounted Secrets (local mode's reader), so no cluster is needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from argocd_image_updater.local.secrets import DirectoryObjects
from argocd_image_updater.writeback.git.auth import HttpsCredentials
from argocd_image_updater.writeback.git.credentials import (
    GitCredentialsError,
    GitCredentialsResolver,
)

NS = "argocd"


def _secret(root: Path, name: str, **data: str) -> None:
    directory = root / NS / name
    directory.mkdir(parents=True)
    for key, value in data.items():
        (directory / key).write_text(value, encoding="utf-8")


@pytest.fixture
def resolver(tmp_path: Path) -> GitCredentialsResolver:
    # Passwords are registered for masking process-wide: none may be a word other tests print.
    _secret(tmp_path, "org-template", url="https://git.example.com/org", password="org-token")
    _secret(
        tmp_path, "team-template", url="https://git.example.com/org/team/", password="team-token"
    )
    _secret(
        tmp_path, "deploy", url="https://Git.Example.com/org/Deploy.git/", password="deploy-token"
    )
    return GitCredentialsResolver(DirectoryObjects(tmp_path), NS)


@pytest.mark.parametrize(
    ("url", "password"),
    [
        # the repository Secret: case, .git and a trailing slash do not matter
        ("https://git.example.com/org/deploy", "deploy-token"),
        ("https://git.example.com/ORG/deploy.git", "deploy-token"),
        # templates: the longest covering prefix wins
        ("https://git.example.com/org/team/app.git", "team-token"),
        ("https://git.example.com/org/other.git", "org-token"),
        # a template ending in "/" covers only that path and below
        ("https://git.example.com/org/teammates/app.git", "org-token"),
    ],
)
async def test_repository_secret_and_templates_match_as_argocd_matches(
    resolver: GitCredentialsResolver, url: str, password: str
) -> None:
    creds = await resolver.resolve("repocreds", url, "tenant")
    assert isinstance(creds, HttpsCredentials)
    assert creds.password == password


async def test_no_covering_secret_is_a_clear_error(resolver: GitCredentialsResolver) -> None:
    with pytest.raises(GitCredentialsError, match="are not configured in Argo CD settings"):
        await resolver.resolve("repocreds", "https://git.example.com/elsewhere/app.git", "t")


async def test_scp_like_and_ssh_urls_are_the_same_repository(tmp_path: Path) -> None:
    _secret(tmp_path, "ssh-deploy", url="git@git.example.com:org/deploy.git", sshPrivateKey="KEY")
    resolver = GitCredentialsResolver(DirectoryObjects(tmp_path), NS)
    creds = await resolver.resolve("repocreds", "ssh://git@git.example.com/org/deploy", "t")
    assert getattr(creds, "private_key", "") == "KEY"
