"""git over SSH reads the operator's ssh client config ($HOME/.ssh/config, which the chart mounts
from argocd-image-updater-ssh-config) as the original does, against the real SSH git server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from argocd_image_updater.writeback.git import (
    GitError,
    NoCredentials,
    RepoCache,
    SshCredentials,
    SshOptions,
    Timeouts,
    WorkTree,
)
from argocd_image_updater_testing.git_servers import GitSshServer, bare_repo, show

pytestmark = pytest.mark.git

AUTHOR = {"author_name": "Image Updater", "author_email": "updater@example.com"}
ALIAS = "git-via-ssh-config"


def _set_tag(tag: str):  # type: ignore[no-untyped-def]
    async def apply(work: WorkTree) -> None:
        work.write("values.yaml", f"image:\n  tag: {tag}\n")

    return apply


@pytest.fixture
def srv(tmp_path: Path) -> Path:
    root = tmp_path / "srv"
    root.mkdir()
    bare_repo(root / "app.git", files={"values.yaml": "image:\n  tag: v1\n"})
    return root


@pytest.fixture
def operator_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The updater's HOME (/app in the image), where the chart mounts the ssh config."""
    home = tmp_path / "app"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


def _alias_url(server: GitSshServer, srv: Path) -> str:
    # No port and a host name that does not resolve: only the config makes this URL reachable.
    return f"ssh://{server.user}@{ALIAS}{srv.resolve()}/app.git"


async def test_host_alias_with_port_from_the_ssh_config(
    srv: Path, tmp_path: Path, operator_home: Path
) -> None:
    cache = RepoCache(tmp_path / "cache", timeouts=Timeouts(network=30, local=30))
    async with GitSshServer(srv) as server:
        creds = SshCredentials(
            server.client_private_key, SshOptions(known_hosts=server.known_hosts_line)
        )
        url = _alias_url(server, srv)
        with pytest.raises(GitError):  # without the config the alias means nothing
            async with cache.checkout(url, creds):
                pass
        (operator_home / ".ssh" / "config").write_text(
            f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {server.port}\n"
        )
        async with cache.checkout(url, creds) as work:
            await work.commit_and_push(_set_tag("via-alias"), "through the alias", **AUTHOR)
    home = tmp_path / "h"
    home.mkdir()
    assert show(srv / "app.git", "main", "values.yaml", home=home) == "image:\n  tag: via-alias\n"


async def test_identity_file_given_only_by_the_ssh_config(
    srv: Path, tmp_path: Path, operator_home: Path
) -> None:
    cache = RepoCache(tmp_path / "cache", timeouts=Timeouts(network=30, local=30))
    async with GitSshServer(srv) as server:
        key = operator_home / "ssh-keys" / "id_ed25519"
        key.parent.mkdir()
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(server.client_private_key)
        creds = NoCredentials(ssh=SshOptions(known_hosts=server.known_hosts_line))
        url = server.url_for("app.git")
        with pytest.raises(GitError):  # no key anywhere: the server refuses
            async with cache.checkout(url, creds):
                pass
        (operator_home / ".ssh" / "config").write_text(f"Host 127.0.0.1\n  IdentityFile {key}\n")
        async with cache.checkout(url, creds) as work:
            await work.commit_and_push(_set_tag("config-key"), "key from the config", **AUTHOR)
    home = tmp_path / "h"
    home.mkdir()
    assert show(srv / "app.git", "main", "values.yaml", home=home) == "image:\n  tag: config-key\n"


async def test_config_cannot_turn_off_host_key_checking(
    srv: Path, tmp_path: Path, operator_home: Path
) -> None:
    cache = RepoCache(tmp_path / "cache", timeouts=Timeouts(network=30, local=30))
    async with GitSshServer(srv) as server:
        (operator_home / ".ssh" / "config").write_text(
            "Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
        )
        creds = SshCredentials(server.client_private_key, SshOptions())  # no known host
        with pytest.raises(GitError, match="host key verification failed"):
            async with cache.checkout(server.url_for("app.git"), creds):
                pass
