"""The sandbox git servers, driven by the plain git CLI: file://, smart HTTP (anonymous, Basic
auth, TLS, chunked bodies, rejecting hook) and SSH with host key checking."""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from argocd_image_updater_testing.git_servers import (
    GitHttpServer,
    GitSshServer,
    bare_repo,
    git,
    log_subjects,
    push_attempts,
    reject_next_pushes,
    show,
)
from argocd_image_updater_testing.registry import TlsFiles

pytestmark = pytest.mark.git

USER = "robot"
PASSWORD = "s3cret-Git-Pa55word"


def _basic_header(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    # Passed as environment-only config: nothing lands in .git/config or argv.
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {token}",
    }


def _commit_and_push(work: Path, home: Path, name: str, text: str, env: dict[str, str]) -> None:
    (work / name).write_text(text)
    git("add", "-A", cwd=work, home=home)
    git("commit", "-q", "-m", f"add {name}", cwd=work, home=home)
    git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=work, home=home, env=env)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def srv(tmp_path: Path) -> Path:
    root = tmp_path / "srv"
    root.mkdir()
    bare_repo(root / "app.git", files={"values.yaml": "image:\n  tag: v1\n", "dir/a.txt": "a\n"})
    return root


@pytest.fixture(autouse=True)
def no_password_on_disk(tmp_path: Path) -> Iterator[None]:
    yield
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert PASSWORD.encode() not in path.read_bytes(), f"password found in {path}"


def test_bare_repo_has_files_and_head(srv: Path, home: Path, tmp_path: Path) -> None:
    repo = srv / "app.git"
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v1\n"
    assert show(repo, "main", "dir/a.txt", home=home) == "a\n"
    assert show(repo, "main", "missing", home=home) is None
    assert git("--git-dir", str(repo), "symbolic-ref", "HEAD", home=home).strip() == (
        "refs/heads/main"
    )
    other = bare_repo(tmp_path / "other.git", branch="trunk")
    assert log_subjects(other, "trunk", home=home) == ["Initial commit"]


def test_http_anonymous_clone_push_and_counters(srv: Path, home: Path, tmp_path: Path) -> None:
    with GitHttpServer(srv) as server:
        work = tmp_path / "work"
        git("clone", "-q", server.url_for("app.git"), str(work), home=home)
        assert (work / "values.yaml").read_text() == "image:\n  tag: v1\n"
        assert server.requests["upload-pack"] >= 2
        assert server.requests["upload-pack:fetch"] == 1
        assert server.requests["receive-pack"] == 0
        _commit_and_push(work, home, "new.txt", "new\n", {})
        assert server.requests["receive-pack"] >= 2
    assert show(srv / "app.git", "main", "new.txt", home=home) == "new\n"


def test_http_basic_auth(srv: Path, home: Path, tmp_path: Path) -> None:
    with GitHttpServer(srv, users={USER: PASSWORD}) as server:
        url = server.url_for("app.git")
        with pytest.raises(subprocess.CalledProcessError) as err:
            git("ls-remote", url, home=home, timeout=20)
        assert "terminal prompts disabled" in err.value.stderr
        failures = server.auth_failures
        with pytest.raises(subprocess.CalledProcessError):
            git("ls-remote", url, home=home, env=_basic_header(USER, "wrong"), timeout=20)
        assert server.auth_failures > failures
        good = _basic_header(USER, PASSWORD)
        work = tmp_path / "work"
        git("clone", "-q", url, str(work), home=home, env=good)
        # Pushing works because the bridge sets REMOTE_USER after authenticating.
        _commit_and_push(work, home, "pushed.txt", "ok\n", good)
    assert show(srv / "app.git", "main", "pushed.txt", home=home) == "ok\n"


def test_http_chunked_push_body(srv: Path, home: Path, tmp_path: Path) -> None:
    with GitHttpServer(srv) as server:
        work = tmp_path / "work"
        git("clone", "-q", server.url_for("app.git"), str(work), home=home)
        blob = work / "blob.bin"
        blob.write_bytes(os.urandom(1_500_000))  # > http.postBuffer: sent chunked
        git("add", "-A", cwd=work, home=home)
        git("commit", "-q", "-m", "big", cwd=work, home=home)
        git("push", "-q", "origin", "HEAD:main", cwd=work, home=home)
        assert server.chunked_requests >= 1
    out = git("--git-dir", str(srv / "app.git"), "cat-file", "-s", "main:blob.bin", home=home)
    assert out.strip() == "1500000"


def test_rejecting_hook_counts_attempts(srv: Path, home: Path, tmp_path: Path) -> None:
    repo = srv / "app.git"
    work = tmp_path / "work"
    git("clone", "-q", repo.as_uri(), str(work), home=home)
    reject_next_pushes(repo, 1, "GH006: Protected branch update failed")
    with pytest.raises(subprocess.CalledProcessError) as err:
        _commit_and_push(work, home, "x.txt", "x\n", {})
    assert "GH006: Protected branch update failed" in err.value.stderr
    assert "pre-receive hook declined" in err.value.stderr
    assert push_attempts(repo) == 1
    git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=work, home=home)
    assert push_attempts(repo) == 2
    assert show(repo, "main", "x.txt", home=home) == "x\n"


def test_https_with_trustme_ca(srv: Path, home: Path, tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file, ca_file = tmp_path / "srv.crt", tmp_path / "srv.key", tmp_path / "ca.pem"
    cert.private_key_pem.write_to_path(str(key_file))
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    ca.cert_pem.write_to_path(str(ca_file))
    with GitHttpServer(srv, tls=TlsFiles(cert_file, key_file, ca_file)) as server:
        url = server.url_for("app.git")
        assert url.startswith("https://")
        with pytest.raises(subprocess.CalledProcessError) as err:
            git("ls-remote", url, home=home, timeout=20)
        assert "certificate" in err.value.stderr.lower()
        out = git("ls-remote", url, home=home, env={"GIT_SSL_CAINFO": str(ca_file)})
        assert "refs/heads/main" in out


def test_ssh_server_checks_host_key(srv: Path, home: Path, tmp_path: Path) -> None:
    with GitSshServer(srv) as server:
        key = tmp_path / "id"
        key.write_text(server.client_private_key)
        key.chmod(0o600)
        known = tmp_path / "known_hosts"
        known.write_text(server.known_hosts_line + "\n")
        assert server.known_hosts_line.startswith(f"[127.0.0.1]:{server.port} ssh-ed25519 ")
        ssh = f"ssh -F /dev/null -i {key} -o IdentitiesOnly=yes -o BatchMode=yes"
        strict = {
            "GIT_SSH_COMMAND": f"{ssh} -o StrictHostKeyChecking=yes -o UserKnownHostsFile={known}"
        }
        url = server.url_for("app.git")
        work = tmp_path / "work"
        git("clone", "-q", url, str(work), home=home, env=strict, timeout=30)
        _commit_and_push(work, home, "ssh.txt", "via ssh\n", strict)
        assert show(srv / "app.git", "main", "ssh.txt", home=home) == "via ssh\n"

        empty = tmp_path / "empty_known_hosts"
        empty.write_text("")
        unknown = {
            "GIT_SSH_COMMAND": f"{ssh} -o StrictHostKeyChecking=yes -o UserKnownHostsFile={empty}"
        }
        with pytest.raises(subprocess.CalledProcessError) as err:
            git("ls-remote", url, home=home, env=unknown, timeout=30)
        assert "Host key verification failed" in err.value.stderr
        # Only git commands run: a shell request is refused by git-shell.
        with pytest.raises(subprocess.CalledProcessError):
            argv = [*ssh.split(), "-o", "StrictHostKeyChecking=yes"]
            argv += ["-o", f"UserKnownHostsFile={known}", "-p", str(server.port)]
            argv += [f"{server.user}@127.0.0.1", "id"]
            env = {"HOME": str(home), "PATH": os.environ["PATH"]}
            subprocess.run(argv, check=True, capture_output=True, timeout=30, env=env)
        pid = server.pid
        assert pid is not None
    assert server.pid is None
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
