"""Optimistic checkouts of the git write-back (``RepoCache.checkout(optimistic=True)``): a
clone left at our own push is used without a fetch and pushed with a lease, and every way the
remote can have moved meanwhile is noticed (moved, reverted, deleted, default branch)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.writeback.git import (
    BranchNotFound,
    HttpsCredentials,
    RepoCache,
    Timeouts,
    WorkTree,
)
from argocd_image_updater_testing.git_servers import (
    GitHttpServer,
    bare_repo,
    git,
    log_subjects,
    push_attempts,
    push_files,
    show,
)

pytestmark = pytest.mark.git

USER = "robot"
PASSWORD = "push-first-Pa55word"
AUTHOR = {"author_name": "Image Updater", "author_email": "updater@example.com"}


def _set_tag(tag: str, path: str = "values.yaml"):  # type: ignore[no-untyped-def]
    async def apply(work: WorkTree) -> None:
        work.write(path, f"image:\n  tag: {tag}\n")

    return apply


def _runs(operation: str) -> float:
    value = REGISTRY.get_sample_value(
        "argocd_image_updater_git_operations_total", {"operation": operation, "result": "success"}
    )
    return value or 0.0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def srv(tmp_path: Path) -> Path:
    root = tmp_path / "srv"
    root.mkdir()
    bare_repo(root / "app.git", files={"values.yaml": "image:\n  tag: v1\n"})
    return root


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[RepoCache]:
    yield RepoCache(tmp_path / "cache", timeouts=Timeouts(network=30, local=30))
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []


@pytest.fixture
async def server(srv: Path) -> AsyncIterator[GitHttpServer]:
    async with GitHttpServer(srv, users={USER: PASSWORD}) as served:
        yield served


CREDS = HttpsCredentials(USER, PASSWORD)


async def _write(cache: RepoCache, url: str, tag: str, branch: str = "main") -> str | None:
    async with cache.checkout(url, CREDS, branch, optimistic=True) as work:
        return await work.commit_and_push(_set_tag(tag), f"to {tag}", **AUTHOR)


async def test_a_clone_left_at_our_push_pushes_without_fetching(
    srv: Path, home: Path, cache: RepoCache, server: GitHttpServer
) -> None:
    url = server.url_for("app.git")
    first = await _write(cache, url, "v2")  # a new clone: fetched
    fetches = _runs("fetch")
    uploads = server.requests["upload-pack"]
    second = await _write(cache, url, "v3")
    assert first and second and first != second
    assert _runs("fetch") == fetches  # no fetch, no upload-pack request at all
    assert server.requests["upload-pack"] == uploads
    repo = srv / "app.git"
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v3\n"
    assert log_subjects(repo, home=home) == ["to v3", "to v2", "Initial commit"]
    assert git("--git-dir", str(repo), "rev-parse", "main", home=home).strip() == second


async def test_a_moved_branch_is_fetched_and_the_edits_made_again(
    srv: Path, home: Path, cache: RepoCache, server: GitHttpServer
) -> None:
    url = server.url_for("app.git")
    await _write(cache, url, "v2")
    repo = srv / "app.git"
    push_files(repo, {"README.md": "elsewhere\n"}, home=home, message="from elsewhere")
    pushes = push_attempts(repo)
    fetches = _runs("fetch")
    sha = await _write(cache, url, "v3")
    # The lease refused the push before anything was sent; one fetch, one real push.
    assert push_attempts(repo) == pushes + 1
    assert _runs("fetch") == fetches + 1
    assert log_subjects(repo, home=home) == ["to v3", "from elsewhere", "to v2", "Initial commit"]
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v3\n"
    assert show(repo, "main", "README.md", home=home) == "elsewhere\n"
    assert git("--git-dir", str(repo), "rev-parse", "main", home=home).strip() == sha
    # A branch others push to is fetched first next time (no wasted push); once a fetch finds
    # it where we left it, pushing first resumes.
    for expected_fetches in (1, 0):
        fetches, pushes = _runs("fetch"), _runs("push")
        await _write(cache, url, f"v{4 + expected_fetches}")
        assert (_runs("fetch") - fetches, _runs("push") - pushes) == (expected_fetches, 1)


async def test_nothing_to_push_is_only_concluded_after_a_fetch(
    srv: Path, home: Path, cache: RepoCache, server: GitHttpServer
) -> None:
    url = server.url_for("app.git")
    await _write(cache, url, "v2")
    repo = srv / "app.git"
    # Someone reverts our change: the clone still holds v2, the remote v1 again.
    push_files(repo, {"values.yaml": "image:\n  tag: v1\n"}, home=home, message="revert")
    sha = await _write(cache, url, "v2")
    assert sha is not None
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v2\n"
    assert log_subjects(repo, home=home)[:2] == ["to v2", "revert"]
    # And when the remote does hold it, nothing is pushed (after a fetch, no reset needed).
    checkouts = _runs("checkout")
    fetches = _runs("fetch")
    assert await _write(cache, url, "v2") is None
    assert _runs("fetch") == fetches + 1
    assert _runs("checkout") == checkouts


async def test_a_deleted_branch_is_not_created_again(
    srv: Path, home: Path, cache: RepoCache, server: GitHttpServer
) -> None:
    repo = srv / "app.git"
    git("--git-dir", str(repo), "branch", "release", "main", home=home)
    url = server.url_for("app.git")
    await _write(cache, url, "v2", branch="release")
    git("--git-dir", str(repo), "branch", "-D", "release", home=home)
    with pytest.raises(BranchNotFound):
        await _write(cache, url, "v3", branch="release")
    refs = git("--git-dir", str(repo), "for-each-ref", "--format=%(refname)", home=home)
    assert "refs/heads/release" not in refs


async def test_the_default_branch_is_always_fetched(
    srv: Path, home: Path, cache: RepoCache, server: GitHttpServer
) -> None:
    url = server.url_for("app.git")
    await _write(cache, url, "v2", branch="HEAD")
    repo = srv / "app.git"
    git("--git-dir", str(repo), "branch", "trunk", "main", home=home)
    push_files(repo, {"README.md": "trunk\n"}, home=home, branch="trunk")
    git("--git-dir", str(repo), "symbolic-ref", "HEAD", "refs/heads/trunk", home=home)
    fetches = _runs("fetch")
    await _write(cache, url, "v3", branch="HEAD")
    assert _runs("fetch") > fetches
    assert show(repo, "trunk", "values.yaml", home=home) == "image:\n  tag: v3\n"
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v2\n"


async def test_a_failed_use_leaves_no_claim(
    srv: Path, home: Path, cache: RepoCache, server: GitHttpServer
) -> None:
    url = server.url_for("app.git")
    await _write(cache, url, "v2")
    with pytest.raises(RuntimeError, match="boom"):
        async with cache.checkout(url, CREDS, "main", optimistic=True) as work:
            work.write("values.yaml", "image:\n  tag: stray\n")
            raise RuntimeError("boom")
    fetches = _runs("fetch")
    sha = await _write(cache, url, "v3")
    assert _runs("fetch") == fetches + 1  # fetched and reset, not trusted
    repo = srv / "app.git"
    assert git("--git-dir", str(repo), "rev-parse", "main", home=home).strip() == sha
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v3\n"


async def test_git_clean_runs_only_when_files_may_be_left_over(
    srv: Path, home: Path, cache: RepoCache, server: GitHttpServer
) -> None:
    url = server.url_for("app.git")
    repo = srv / "app.git"
    cleans = _runs("clean")
    await _write(cache, url, "v2")  # a new clone: nothing to clean
    push_files(repo, {"README.md": "one\n"}, home=home)
    await _write(cache, url, "v3")  # refused, fetched, reset from our own commit
    push_files(repo, {"README.md": "two\n"}, home=home)
    await _write(cache, url, "v4")  # fetched first, from the commit the last use left
    assert _runs("clean") == cleans
    async with cache.checkout(url, CREDS, "main") as work:
        work.write("stray.yaml", "x: 1\n")  # never committed
    push_files(repo, {"README.md": "three\n"}, home=home)
    async with cache.checkout(url, CREDS, "main") as work:
        assert work.read("stray.yaml") is None
    assert _runs("clean") == cleans + 1
    assert show(repo, "main", "values.yaml", home=home) == "image:\n  tag: v4\n"
