"""RepoCache and WorkTree against real git servers: file://, smart HTTP with Basic auth, HTTPS
with a private CA, SSH with host key checking; push races, denied pushes, timeouts, reuse."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from argocd_image_updater.kits.yamltext import set_value
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.writeback.git import (
    BranchNotFound,
    GitAuthError,
    GitError,
    GitHostKeyError,
    GitTimeout,
    GitTlsError,
    HttpsCredentials,
    NoCredentials,
    PushDenied,
    PushRejected,
    RepoCache,
    SshCredentials,
    SshOptions,
    Timeouts,
    TlsOptions,
    WorkTree,
    atomic_write,
)
from argocd_image_updater.writeback.git.process import error_for, minimal_env, run_git
from argocd_image_updater.writeback.git.repo import split_credentials
from argocd_image_updater_testing.git_servers import (
    GitHttpServer,
    GitSshServer,
    bare_repo,
    git,
    git_env,
    log_subjects,
    push_attempts,
    push_files,
    reject_next_pushes,
    show,
)
from argocd_image_updater_testing.registry import TlsFiles

pytestmark = pytest.mark.git

USER = "robot"
PASSWORD = "s3cret-Git-Pa55word"
AUTHOR = {"author_name": "Image Updater", "author_email": "updater@example.com"}
VALUES = "image:\n  tag: v1\n"


def _set_tag(tag: str, path: str = "values.yaml"):  # type: ignore[no-untyped-def]
    async def apply(work: WorkTree) -> None:
        work.write(path, f"image:\n  tag: {tag}\n")

    return apply


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def srv(tmp_path: Path) -> Path:
    root = tmp_path / "srv"
    root.mkdir()
    bare_repo(root / "app.git", files={"values.yaml": VALUES})
    return root


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[RepoCache]:
    cache = RepoCache(tmp_path / "cache", timeouts=Timeouts(network=30, local=30))
    yield cache
    # Nothing of a finished operation stays behind: no askpass, key or message files.
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []


@pytest.fixture(autouse=True)
def no_password_on_disk(tmp_path: Path) -> Iterator[None]:
    yield
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert PASSWORD.encode() not in path.read_bytes(), f"password found in {path}"


@pytest.fixture
async def http_auth(srv: Path) -> AsyncIterator[GitHttpServer]:
    async with GitHttpServer(srv, users={USER: PASSWORD}) as server:
        yield server


def _config(cache: RepoCache, url: str) -> str:
    return (cache.path_for(url) / ".git" / "config").read_text()


# --- file:// and the basic flow ---------------------------------------------------------------


async def test_file_checkout_commit_push(srv: Path, home: Path, cache: RepoCache) -> None:
    url = (srv / "app.git").as_uri()
    async with cache.checkout(url) as work:
        assert work.branch == "main"
        assert work.read("values.yaml") == VALUES
        assert work.read("missing.yaml") is None
        sha = await work.commit_and_push(_set_tag("v2"), "build: update to v2", **AUTHOR)
        assert sha is not None
        # Idempotent edits: a second run changes nothing and makes no commit.
        assert await work.commit_and_push(_set_tag("v2"), "again", **AUTHOR) is None
    repo = srv / "app.git"
    assert git("--git-dir", str(repo), "rev-parse", "main", home=home).strip() == sha
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v2\n"
    assert log_subjects(repo, home=home) == ["build: update to v2", "Initial commit"]
    author = git("--git-dir", str(repo), "log", "-1", "--format=%an <%ae>|%cn", home=home)
    assert author.strip() == "Image Updater <updater@example.com>|Image Updater"


async def test_write_branch_created_from_base_then_reused(
    srv: Path, home: Path, cache: RepoCache
) -> None:
    url = (srv / "app.git").as_uri()
    branch = "image-updater/app"
    async with cache.checkout(url, branch=branch, base="main") as work:
        assert work.remote_head is None  # new branch
        first = await work.commit_and_push(_set_tag("v2"), "to v2", **AUTHOR)
    async with cache.checkout(url, branch=branch, base="main") as work:
        assert work.remote_head == first  # builds on the existing write branch
        assert work.read("values.yaml") == "image:\n  tag: v2\n"
        await work.commit_and_push(_set_tag("v3"), "to v3", **AUTHOR)
    repo = srv / "app.git"
    assert log_subjects(repo, branch, home=home) == ["to v3", "to v2", "Initial commit"]
    assert log_subjects(repo, "main", home=home) == ["Initial commit"]
    async with cache.checkout(url, branch=None) as work:
        with pytest.raises(BranchNotFound):
            await work.checkout("no-such-branch")


async def test_head_resolves_to_remote_default_branch(tmp_path: Path, cache: RepoCache) -> None:
    repo = bare_repo(tmp_path / "trunk.git", branch="trunk", files={"a": "1\n"})
    for name in ("HEAD", ""):
        async with cache.checkout(repo.as_uri(), branch=name) as work:
            assert work.branch == "trunk"
            assert await work.default_branch() == "trunk"
            assert await work.fetch("HEAD") == work.head


async def test_a_changed_default_branch_is_noticed(
    tmp_path: Path, home: Path, cache: RepoCache
) -> None:
    repo = bare_repo(tmp_path / "moving.git", files={"a": "1\n"})
    async with cache.checkout(repo.as_uri()) as work:
        assert work.branch == "main"
    # The default branch is kept in the clone; the next checkout only fetches (and checks it).
    stored = cache.path_for(repo.as_uri()) / ".git" / "refs" / "remotes" / "origin" / "HEAD"
    assert stored.read_text() == "ref: refs/remotes/origin/main\n"
    git("--git-dir", str(repo), "branch", "trunk", "main", home=home)
    push_files(repo, {"a": "2\n"}, home=home, branch="trunk")
    git("--git-dir", str(repo), "symbolic-ref", "HEAD", "refs/heads/trunk", home=home)
    async with cache.checkout(repo.as_uri()) as work:
        assert work.branch == "trunk"
        assert work.read("a") == "2\n"
        sha = await work.commit_and_push(_set_tag("v2", "a"), "on trunk", **AUTHOR)
    assert git("--git-dir", str(repo), "rev-parse", "trunk", home=home).strip() == sha
    assert stored.read_text() == "ref: refs/remotes/origin/trunk\n"


async def test_new_files_and_files_with_pathspec_characters_are_committed(
    srv: Path, home: Path, cache: RepoCache
) -> None:
    url = (srv / "app.git").as_uri()

    async def apply(work: WorkTree) -> None:
        work.write("values.yaml", "image:\n  tag: v9\n")
        work.write("new/[a]*.yaml", "x: 1\n")
        work.write("new/[a]*.yaml", "x: 2\n")  # written twice: still a new file

    async with cache.checkout(url) as work:
        sha = await work.commit_and_push(apply, "files", **AUTHOR)
        assert sha is not None and work.head == sha
        assert await work.commit_and_push(apply, "again", **AUTHOR) is None
    repo = srv / "app.git"
    assert show(repo, "main", "new/[a]*.yaml", home=home) == "x: 2\n"
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v9\n"
    assert log_subjects(repo, home=home) == ["files", "Initial commit"]


@pytest.mark.parametrize("url", ["https://h/org/app.git", 'https://h/a"b\\c#d;e .git'])
def test_the_remote_url_reads_back_from_the_clone_config(
    url: str, tmp_path: Path, home: Path
) -> None:
    from argocd_image_updater.writeback.git.repo import config_value

    git("init", "-q", str(tmp_path / "c"), home=home)
    with open(tmp_path / "c" / ".git" / "config", "a") as config:
        config.write(f'[remote "origin"]\n\turl = {config_value(url)}\n')
    assert git("config", "--get", "remote.origin.url", cwd=tmp_path / "c", home=home) == url + "\n"
    with pytest.raises(ValueError, match="control characters"):
        config_value("https://h/a\nb")


def _git_runs(operation: str) -> float:
    value = REGISTRY.get_sample_value(
        "argocd_image_updater_git_operations_total", {"operation": operation, "result": "success"}
    )
    return value or 0.0


async def test_a_work_tree_left_clean_is_not_checked_out_again(
    srv: Path, home: Path, cache: RepoCache
) -> None:
    url = (srv / "app.git").as_uri()
    async with cache.checkout(url) as work:
        await work.commit_and_push(_set_tag("v2"), "to v2", **AUTHOR)
    checkouts = _git_runs("checkout")
    async with cache.checkout(url) as work:  # left at the pushed commit, unmodified
        assert work.read("values.yaml") == "image:\n  tag: v2\n"
        work.write("stray.yaml", "x: 1\n")  # not committed: the next use must reset
    assert _git_runs("checkout") == checkouts
    async with cache.checkout(url) as work:
        assert work.read("stray.yaml") is None
    assert _git_runs("checkout") == checkouts + 1
    with pytest.raises(RuntimeError, match="boom"):
        async with cache.checkout(url) as work:
            raise RuntimeError("boom")  # a use that fails leaves no claim either
    async with cache.checkout(url) as work:
        assert work.read("values.yaml") == "image:\n  tag: v2\n"
    assert _git_runs("checkout") == checkouts + 2
    push_files(srv / "app.git", {"values.yaml": "image:\n  tag: remote\n"}, home=home)
    async with cache.checkout(url) as work:  # the remote moved: checked out again
        assert work.read("values.yaml") == "image:\n  tag: remote\n"
    assert _git_runs("checkout") == checkouts + 3


async def test_work_tree_paths_are_confined(srv: Path, cache: RepoCache) -> None:
    async with cache.checkout((srv / "app.git").as_uri()) as work:
        for bad in ("../outside", "/etc/passwd", ".git/config", "a/../../b"):
            with pytest.raises(ValueError):
                work.write(bad, "x")
        (work.path / "sneaky").symlink_to(".git/config")
        with pytest.raises(ValueError, match=r"points into \.git"):
            work.write("sneaky", "x")
        work.write("deep/new/dir/file.yaml", "x: 1\n")
        assert work.read("deep/new/dir/file.yaml") == "x: 1\n"
        assert not list((work.path / "deep/new/dir").glob(".tmp-*"))
    # The next checkout starts from the remote state again: untracked files are gone.
    async with cache.checkout((srv / "app.git").as_uri()) as work:
        assert work.read("deep/new/dir/file.yaml") is None


async def test_work_tree_links_are_followed_only_inside(
    srv: Path, cache: RepoCache, tmp_path: Path
) -> None:
    """A symbolic link anywhere on a path is resolved: inside the work tree it is followed,
    out of it (or into ``.git``) the path is refused, for reading as for writing."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "values.yaml").write_text("secret: 1\n")
    async with cache.checkout((srv / "app.git").as_uri()) as work:
        (work.path / "apps" / "real").mkdir(parents=True)
        (work.path / "apps" / "alias").symlink_to("real")
        (work.path / "apps" / "away").symlink_to(outside)
        (work.path / "apps" / "git").symlink_to("../.git")
        work.write("apps/alias/values.yaml", "tag: v1\n")
        assert (work.path / "apps" / "real" / "values.yaml").read_text() == "tag: v1\n"
        assert work.read("apps/alias/values.yaml") == "tag: v1\n"
        for bad in ("apps/away/values.yaml", "apps/away/new/values.yaml"):
            with pytest.raises(ValueError, match="leaves the repository"):
                work.read(bad)
            with pytest.raises(ValueError, match="leaves the repository"):
                work.write(bad, "x: 1\n")
        with pytest.raises(ValueError, match=r"points into \.git"):
            work.write("apps/git/config", "x")
        # A missing directory below a real one is created; nothing was written outside.
        work.write("apps/real/new/values.yaml", "tag: v2\n")
        assert work.read("apps/real/new/values.yaml") == "tag: v2\n"
    assert (outside / "values.yaml").read_text() == "secret: 1\n"
    assert sorted(p.name for p in outside.iterdir()) == ["values.yaml"]


# --- HTTP with Basic auth ---------------------------------------------------------------------


async def test_http_basic_auth_push(
    srv: Path, home: Path, cache: RepoCache, http_auth: GitHttpServer
) -> None:
    url = http_auth.url_for("app.git")
    creds = HttpsCredentials(USER, PASSWORD)
    async with cache.checkout(url, creds) as work:
        await work.commit_and_push(_set_tag("v2"), "over http", **AUTHOR)
    assert show(srv / "app.git", "main", "values.yaml", home=home) == "image:\n  tag: v2\n"
    config = _config(cache, url)
    assert f"url = {url}\n" in config
    assert PASSWORD not in config and USER not in config


async def test_http_credentials_in_url_are_not_stored(
    srv: Path, home: Path, cache: RepoCache, http_auth: GitHttpServer
) -> None:
    url = http_auth.url_for("app.git")
    with_creds = url.replace("http://", f"http://{USER}:{PASSWORD}@")
    assert split_credentials(with_creds) == (url, HttpsCredentials(USER, PASSWORD))
    async with cache.checkout(with_creds) as work:
        assert work.url == url
        await work.commit_and_push(_set_tag("v5"), "creds in url", **AUTHOR)
    assert url in cache and with_creds in cache and len(cache) == 1
    assert PASSWORD not in _config(cache, url)
    assert show(srv / "app.git", "main", "values.yaml", home=home) == "image:\n  tag: v5\n"


@pytest.mark.parametrize(
    "creds", [HttpsCredentials(USER, "wrong-password"), NoCredentials()], ids=["wrong", "none"]
)
async def test_http_bad_credentials_fail_clearly(
    srv: Path, cache: RepoCache, http_auth: GitHttpServer, creds: HttpsCredentials | NoCredentials
) -> None:
    started = time.monotonic()
    with pytest.raises(GitAuthError) as err:
        async with cache.checkout(http_auth.url_for("app.git"), creds):
            pass
    assert "authentication failed" in str(err.value)
    assert PASSWORD not in str(err.value) and "wrong-password" not in str(err.value)
    assert time.monotonic() - started < 20  # no prompt waiting for input
    assert http_auth.requests["receive-pack"] == 0


def test_error_messages_redact_url_passwords() -> None:
    err = error_for("fetch", 128, "fatal: unable to access 'https://bob:hunter22@example.com/x'")
    assert "hunter22" not in str(err)
    assert "bob:*****@example.com" in str(err)
    assert "git fetch failed (exit 128)" in str(err)


# --- HTTPS with a private CA ------------------------------------------------------------------


async def test_https_ca(srv: Path, tmp_path: Path, home: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    crt, key = tmp_path / "srv.crt", tmp_path / "srv.key"
    cert.cert_chain_pems[0].write_to_path(str(crt))
    cert.private_key_pem.write_to_path(str(key))
    ca_pem = ca.cert_pem.bytes().decode()
    cache = RepoCache(tmp_path / "cache", timeouts=Timeouts(network=30, local=30))
    async with GitHttpServer(srv, users={USER: PASSWORD}, tls=TlsFiles(crt, key)) as server:
        url = server.url_for("app.git")
        with pytest.raises(GitTlsError) as err:
            async with cache.checkout(url, HttpsCredentials(USER, PASSWORD)):
                pass
        assert "TLS certificate verification failed" in str(err.value)
        creds = HttpsCredentials(USER, PASSWORD, TlsOptions(ca_pem=ca_pem))
        async with cache.checkout(url, creds) as work:
            await work.commit_and_push(_set_tag("tls"), "over https", **AUTHOR)
        insecure = HttpsCredentials(USER, PASSWORD, TlsOptions(insecure=True))
        async with cache.checkout(url, insecure) as work:
            assert work.read("values.yaml") == "image:\n  tag: tls\n"
    assert show(srv / "app.git", "main", "values.yaml", home=home) == "image:\n  tag: tls\n"


# --- SSH --------------------------------------------------------------------------------------


def _other_host_key(tmp_path: Path, port: int) -> str:
    key = tmp_path / "other_host_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30
    )
    kind, blob = key.with_suffix(".pub").read_text().split()[:2]
    return f"[127.0.0.1]:{port} {kind} {blob}"


async def test_ssh_host_key_checking(srv: Path, tmp_path: Path, home: Path) -> None:
    repo = srv / "app.git"
    cache = RepoCache(tmp_path / "cache", timeouts=Timeouts(network=30, local=30))
    async with GitSshServer(srv) as server:
        url = server.url_for("app.git")
        key = server.client_private_key
        good = SshCredentials(key, SshOptions(known_hosts=server.known_hosts_line))
        async with cache.checkout(url, good) as work:
            await work.commit_and_push(_set_tag("ssh"), "over ssh", **AUTHOR)
        assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: ssh\n"
        head = git("--git-dir", str(repo), "rev-parse", "main", home=home)

        wrong = SshOptions(known_hosts=_other_host_key(tmp_path, server.port))
        for options in (SshOptions(), wrong):
            with pytest.raises(GitHostKeyError) as err:
                async with cache.checkout(url, SshCredentials(key, options)):
                    pass
            assert "host key verification failed" in str(err.value)
            assert "PRIVATE KEY" not in str(err.value)

        insecure = SshCredentials(key, SshOptions(insecure_ignore_host_key=True))
        async with cache.checkout(url, insecure) as work:
            await work.commit_and_push(_set_tag("insecure"), "insecure ssh", **AUTHOR)
    assert push_attempts(repo) == 2  # nothing was pushed with a bad host key
    assert git("--git-dir", str(repo), "rev-parse", "main~1", home=home) == head
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []  # key files removed


# --- races and refusals -----------------------------------------------------------------------


async def test_same_repository_is_serialised(srv: Path, home: Path, cache: RepoCache) -> None:
    url = (srv / "app.git").as_uri()
    inside = 0
    most = 0

    async def update(name: str) -> str | None:
        nonlocal inside, most
        async with cache.checkout(url) as work:
            inside += 1
            most = max(most, inside)
            try:
                return await work.commit_and_push(_set_tag(name, f"{name}.yaml"), name, **AUTHOR)
            finally:
                inside -= 1

    shas = await asyncio.gather(*(update(f"app{i}") for i in range(3)))
    assert most == 1 and all(shas)
    assert sorted(log_subjects(srv / "app.git", home=home)[:3]) == ["app0", "app1", "app2"]


async def test_concurrent_pusher_is_kept(
    srv: Path, home: Path, cache: RepoCache, http_auth: GitHttpServer
) -> None:
    repo = srv / "app.git"
    calls = 0

    async def apply(work: WorkTree) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # someone else pushes between our fetch and our push
            await asyncio.to_thread(
                push_files, repo, {"other.txt": "theirs\n"}, home=home, message="their change"
            )
        work.write("values.yaml", "image:\n  tag: v9\n")

    async with cache.checkout(http_auth.url_for("app.git"), HttpsCredentials(USER, PASSWORD)) as w:
        sha = await w.commit_and_push(apply, "our change", backoff=0.01, **AUTHOR)
    assert calls == 2
    assert log_subjects(repo, home=home) == ["our change", "their change", "Initial commit"]
    assert git("--git-dir", str(repo), "rev-parse", "main", home=home).strip() == sha
    assert show(repo, "main", "other.txt", home=home) == "theirs\n"
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v9\n"


async def test_rejections_are_bounded(srv: Path, home: Path, cache: RepoCache) -> None:
    repo = srv / "app.git"
    calls = 0

    async def apply(work: WorkTree) -> None:
        nonlocal calls
        calls += 1
        await asyncio.to_thread(push_files, repo, {f"n{calls}": "x"}, home=home)
        work.write("values.yaml", "image:\n  tag: lost\n")

    async with cache.checkout(repo.as_uri()) as work:
        with pytest.raises(PushRejected):
            await work.commit_and_push(apply, "never lands", max_attempts=3, backoff=0, **AUTHOR)
    assert calls == 3
    assert "never lands" not in log_subjects(repo, home=home)


async def test_force_with_lease_only_on_own_branch(srv: Path, home: Path, cache: RepoCache) -> None:
    repo = srv / "app.git"
    url = repo.as_uri()
    branch = "image-updater/own"
    async with cache.checkout(url, branch=branch, base="main") as work:
        await work.commit_and_push(_set_tag("a"), "ours", force=True, **AUTHOR)
    async with cache.checkout(url) as work:
        await work.commit(**AUTHOR, message="local only")
        with pytest.raises(ValueError, match="base branch"):
            await work.push(force=True)
    calls = 0

    async def apply(work: WorkTree) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # the lease protects a write branch that moved under us
            await asyncio.to_thread(push_files, repo, {"t": "x"}, home=home, branch=branch)
        work.write("values.yaml", "image:\n  tag: b\n")

    async with cache.checkout(url, branch=branch, base="main") as work:
        await work.commit_and_push(apply, "ours again", force=True, backoff=0, **AUTHOR)
    assert calls == 2
    assert log_subjects(repo, branch, home=home)[:3] == [
        "ours again",
        "Change from elsewhere",
        "ours",
    ]


async def test_denied_push_is_not_retried_and_clone_is_reset(
    srv: Path, home: Path, cache: RepoCache
) -> None:
    repo = srv / "app.git"
    reject_next_pushes(repo, 5, "GH006: Protected branch update failed for refs/heads/main.")
    async with cache.checkout(repo.as_uri()) as work:
        with pytest.raises(PushDenied) as err:
            await work.commit_and_push(_set_tag("v2"), "denied", backoff=0, **AUTHOR)
        assert "GH006: Protected branch update failed" in str(err.value)
        assert "denied by the remote" in str(err.value)
        local = work.head
    assert push_attempts(repo) == 1
    assert log_subjects(repo, home=home) == ["Initial commit"]
    async with cache.checkout(repo.as_uri()) as work:
        assert work.head != local
        assert work.head == git("--git-dir", str(repo), "rev-parse", "main", home=home).strip()
        assert work.read("values.yaml") == VALUES


# --- timeouts, reuse, eviction ----------------------------------------------------------------


def _processes_with(marker: bytes, program: bytes = b"") -> list[int]:
    """Processes whose environment holds ``marker`` (and that run ``program``)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            argv0 = cmdline.split(b"\0")[0].rsplit(b"/", 1)[-1]
            if marker in environ.split(b"\0") and program in (b"", argv0):
                found.append(int(entry))
    return found


async def _eventually(check: Callable[[], bool], within: float) -> bool:
    """Poll ``check`` until it holds or ``within`` seconds have passed."""
    deadline = time.monotonic() + within
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)


def _blocking_until(check: Callable[[], bool], within: float) -> bool:
    """Like :func:`_eventually`, but without letting the event loop run meanwhile."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


async def _finishes(task: asyncio.Task[Any], within: float) -> bool:
    """Whether ``task`` ends within ``within`` seconds (so a hang fails the test, not the run)."""
    done, _ = await asyncio.wait({task}, timeout=within)
    return task in done


@pytest.fixture
def leftovers() -> Iterator[list[bytes]]:
    """Markers (see :func:`_processes_with`) of the test's processes: whatever still runs with
    one at the end is killed, so a failing test leaves nothing running behind it."""
    markers: list[bytes] = []
    yield markers
    for marker in markers:
        for pid in _processes_with(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("scheme", ["http", "ssh"])
async def test_timeout_kills_the_process_group(
    tmp_path: Path, scheme: str, leftovers: list[bytes]
) -> None:
    silent = socket.socket()  # accepts connections (backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    url = f"{scheme}://git@127.0.0.1:{port}/app.git".replace("http://git@", "http://")
    creds = SshCredentials("unused", SshOptions(insecure_ignore_host_key=True))
    cache = RepoCache(tmp_path / "cache", timeouts=Timeouts(network=1.0, local=30))
    marker = f"HOME={tmp_path / 'cache' / 'home'}".encode()
    leftovers.append(marker)
    transport = b"ssh" if scheme == "ssh" else b"git-remote-http"

    async def use() -> None:
        async with cache.checkout(url, creds if scheme == "ssh" else None):
            pass

    task = asyncio.create_task(use())
    try:
        # git and its transport child (ssh or git-remote-http) are running, stuck.
        assert await _eventually(lambda: bool(_processes_with(marker, transport)), 10)
        with pytest.raises(GitTimeout, match="timed out after 1 s"):
            await task
        assert await _eventually(lambda: not _processes_with(marker), 30)
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        silent.close()
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []


async def test_cancellation_kills_the_process_group(tmp_path: Path, leftovers: list[bytes]) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    cache = RepoCache(tmp_path / "cache", timeouts=Timeouts(network=60, local=30))
    marker = f"HOME={tmp_path / 'cache' / 'home'}".encode()
    leftovers.append(marker)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/app.git"

    async def use() -> None:
        async with cache.checkout(url):
            pass

    task = asyncio.create_task(use())
    try:
        assert await _eventually(lambda: bool(_processes_with(marker, b"git-remote-http")), 10)
        task.cancel()
        assert await _finishes(task, 30), "the cancelled checkout did not end"
        assert task.cancelled()
        assert await _eventually(lambda: not _processes_with(marker), 30)
    finally:
        task.cancel()
        silent.close()


async def test_cancellation_while_git_starts_kills_the_process_group(
    tmp_path: Path, leftovers: list[bytes]
) -> None:
    """asyncio forks git before it connects git's pipes: a cancellation in between must still
    kill whatever git started (here a shell and two sleeps holding the pipes), not hang."""
    env = minimal_env(tmp_path)
    marker = f"HOME={tmp_path}".encode()
    leftovers.append(marker)
    args = ["-c", "alias.hang=!sleep 60 & sleep 60", "hang"]
    task = asyncio.create_task(run_git(args, cwd=tmp_path, env=env, timeout=60))
    try:
        # One loop step at a time until git is forked; then, with the loop held still (so the
        # start cannot complete), until git has started its children; then cancel.
        for _ in range(1000):
            await asyncio.sleep(0)
            if _processes_with(marker, b"git"):
                break
        assert _blocking_until(lambda: len(_processes_with(marker, b"sleep")) >= 2, 10)
        task.cancel()
        assert await _finishes(task, 30), "the cancelled git did not end"
        assert task.cancelled()
        # run_git reaps the whole group before the cancellation goes on.
        assert _processes_with(marker) == []
    finally:
        task.cancel()


async def test_run_git_kills_background_children_on_timeout(
    tmp_path: Path, leftovers: list[bytes]
) -> None:
    env = minimal_env(tmp_path)
    marker = f"HOME={tmp_path}".encode()
    leftovers.append(marker)
    # The alias's shell leaves a background child behind: it must die with the group.
    args = ["-c", "alias.hang=!sleep 60 & sleep 60", "hang"]
    task = asyncio.create_task(run_git(args, cwd=tmp_path, env=env, timeout=1.0))
    assert await _eventually(lambda: len(_processes_with(marker, b"sleep")) >= 2, 10)
    with pytest.raises(GitTimeout):
        await task
    assert await _eventually(lambda: not _processes_with(marker), 30)


async def test_second_checkout_reuses_the_clone(
    srv: Path, home: Path, cache: RepoCache, http_auth: GitHttpServer
) -> None:
    url = http_auth.url_for("app.git")
    creds = HttpsCredentials(USER, PASSWORD)
    async with cache.checkout(url, creds) as work:
        first_path = work.path
    # One upload-pack session per checkout, as a plain clone: no ls-remote before the fetch
    # (HEAD is learned once, then checked by the fetch itself).
    sessions = http_auth.requests["upload-pack:fetch"]
    assert http_auth.requests["upload-pack:ls-refs"] == sessions + 1
    async with cache.checkout(url, creds) as work:
        assert work.path == first_path
        assert work.read("values.yaml") == VALUES
    assert http_auth.requests["upload-pack:fetch"] == sessions + 1
    assert http_auth.requests["upload-pack:ls-refs"] == sessions + 2
    push_files(srv / "app.git", {"values.yaml": "image:\n  tag: remote\n"}, home=home)
    async with cache.checkout(url, creds, "main") as work:
        assert work.read("values.yaml") == "image:\n  tag: remote\n"
    assert http_auth.requests["upload-pack:fetch"] == sessions + 2
    assert http_auth.requests["upload-pack:ls-refs"] == sessions + 3
    assert len(cache) == 1
    # A new cache over the same root (a restart) adopts the clone.
    again = RepoCache(cache.root)
    assert url in again


async def test_lru_eviction(tmp_path: Path) -> None:
    repos = [bare_repo(tmp_path / f"r{i}.git", files={"f": f"{i}\n"}) for i in range(3)]
    cache = RepoCache(tmp_path / "cache", max_repos=2)
    for repo in repos:
        async with cache.checkout(repo.as_uri()):
            pass
    assert len(cache) == 2
    assert repos[0].as_uri() not in cache
    assert not cache.path_for(repos[0].as_uri()).exists()
    assert cache.path_for(repos[2].as_uri()).exists()

    small = RepoCache(tmp_path / "small", max_bytes=1)
    for repo in repos:
        async with small.checkout(repo.as_uri()):
            pass
    assert len(small) == 1  # only the most recent clone stays over a tiny budget


async def test_ssh_signed_commit_and_metrics(srv: Path, tmp_path: Path, home: Path) -> None:
    key = tmp_path / "signing_key"
    keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)]
    await asyncio.to_thread(subprocess.run, keygen, check=True, timeout=30)

    def count(result: str) -> float:
        value = REGISTRY.get_sample_value(
            "argocd_image_updater_git_operations_total", {"operation": "push", "result": result}
        )
        return value or 0.0

    before = count("success")
    cache = RepoCache(tmp_path / "cache")
    async with cache.checkout((srv / "app.git").as_uri()) as work:
        await work.commit_and_push(
            _set_tag("signed"),
            "signed",
            signing_key=str(key),
            signing_method="ssh",
            sign_off=True,
            **AUTHOR,
        )
    raw = git("--git-dir", str(srv / "app.git"), "cat-file", "commit", "main", home=home)
    assert "-----BEGIN SSH SIGNATURE-----" in raw
    assert "Signed-off-by: Image Updater <updater@example.com>" in raw
    assert count("success") == before + 1


async def test_git_error_names_the_subcommand(tmp_path: Path) -> None:
    with pytest.raises(GitError, match=r"git rev-parse failed \(exit 128\)"):
        await run_git(["rev-parse", "HEAD"], cwd=tmp_path, env=minimal_env(tmp_path), timeout=30)


def _blob(repo: Path, spec: str, home: Path) -> bytes:
    """The bytes of ``spec`` (``ref:path``) in ``repo``, without any newline translation."""
    return subprocess.run(
        ["git", "--git-dir", str(repo), "show", spec],
        env=git_env(home),
        capture_output=True,
        check=True,
    ).stdout


async def test_crlf_files_keep_their_line_ends(srv: Path, home: Path, cache: RepoCache) -> None:
    """A CRLF file is read and written back byte for byte: only the edited value changes."""
    crlf = b"# deployed by CI\r\nimage:\r\n  tag: v1\r\n"
    (srv / "crlf").mkdir()
    work_dir = srv / "crlf" / "work"
    git("clone", "-q", (srv / "app.git").as_uri(), str(work_dir), home=home)
    (work_dir / "values.yaml").write_bytes(crlf)
    git("-c", "core.autocrlf=false", "commit", "-qam", "crlf", cwd=work_dir, home=home)
    git("push", "-q", "origin", "HEAD:main", cwd=work_dir, home=home)

    async def edit(work: WorkTree) -> None:
        text = work.read("values.yaml")
        assert text is not None and text.encode() == crlf
        work.write("values.yaml", set_value(text, ["image", "tag"], "v2"))

    async with cache.checkout((srv / "app.git").as_uri()) as work:
        await work.commit_and_push(edit, "crlf edit", **AUTHOR)
    assert _blob(srv / "app.git", "main:values.yaml", home) == crlf.replace(b"v1", b"v2")


def test_atomic_write_keeps_the_mode_and_leaves_nothing_behind(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old\n")
    script.chmod(0o750)
    atomic_write(script, "#!/bin/sh\r\necho ü\n")
    assert script.read_bytes() == "#!/bin/sh\r\necho ü\n".encode()
    assert script.stat().st_mode & 0o777 == 0o750
    atomic_write(tmp_path / "new.yaml", "a: 1\n")
    assert (tmp_path / "new.yaml").stat().st_mode & 0o777 == 0o644
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError):
        atomic_write(tmp_path / "dir", "x")  # the rename fails: the temp file is removed
    with pytest.raises(UnicodeEncodeError):
        atomic_write(script, "\udc80")
    assert script.read_bytes() == "#!/bin/sh\r\necho ü\n".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "new.yaml", "run.sh"]
