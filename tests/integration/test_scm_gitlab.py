"""GitLab merge requests: the real client against the GitLab API stand-in over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from argocd_image_updater.writeback.scm import (
    GitLabClient,
    ScmAuthError,
    ScmError,
    ScmNotFoundError,
    ScmRateLimitError,
    ensure_pull_request,
    parse_repo_url,
)
from argocd_image_updater_testing.scm import GitLabFake

TOKEN = "glpat-Xy7FakeTokenForTests00042"
PATH = "platform/team-a/deploy"
REPO = parse_repo_url(f"git@gitlab.example.com:{PATH}.git")
ENCODED = "platform%2Fteam-a%2Fdeploy"
PREFIX = "image-updater-1a2b3c4d-"


@pytest.fixture
async def gitlab() -> AsyncIterator[GitLabFake]:
    async with GitLabFake(tokens=[TOKEN], projects=[PATH]) as fake:
        yield fake


@pytest.fixture
async def client(gitlab: GitLabFake) -> AsyncIterator[GitLabClient]:
    async with GitLabClient(TOKEN, base_url=gitlab.url) as gl:
        yield gl


async def test_create_then_find_open(gitlab: GitLabFake, client: GitLabClient) -> None:
    mr = await client.create(REPO, "update-1", "main", "build: update", "details", ["a", "b"])
    assert (mr.number, mr.head, mr.base, mr.state) == (1, "update-1", "main", "open")
    assert mr.url == f"{gitlab.url}/{PATH}/-/merge_requests/1"
    assert mr.labels == ("a", "b")

    found = await client.find_open(REPO, "update-1", "main")
    assert found == mr
    assert found is not None and found.body == "details"
    assert await client.find_open(REPO, "update-1", "release") is None

    post = gitlab.calls("POST")[0]
    # the project is addressed by its URL-encoded full path (subgroups included)
    assert post.path == f"/api/v4/projects/{ENCODED}/merge_requests"
    assert post.headers["PRIVATE-TOKEN"] == TOKEN
    assert "Authorization" not in post.headers
    # labels are sent at creation as a comma-separated list
    assert post.body == {
        "source_branch": "update-1",
        "target_branch": "main",
        "title": "build: update",
        "description": "details",
        "labels": "a,b",
    }
    get = gitlab.calls("GET")[0]
    assert get.query["state"] == "opened"
    assert (get.query["source_branch"], get.query["target_branch"]) == ("update-1", "main")


async def test_create_again_turns_into_the_existing_merge_request(
    gitlab: GitLabFake, client: GitLabClient
) -> None:
    first = await client.create(REPO, "update-1", "main", "title", "", [])
    again = await client.create(REPO, "update-1", "main", "other", "", [])
    assert again.number == first.number and again.title == "title"
    assert len(gitlab.merge_requests(PATH)) == 1
    assert [r.method for r in gitlab.requests] == ["POST", "POST", "GET"]


async def test_ensure_updates_title_description_and_labels(
    gitlab: GitLabFake, client: GitLabClient
) -> None:
    mr, created, _ = await ensure_pull_request(
        client, REPO, "image-updater-1", "main", "build: v1", "body v1", ["deps"]
    )
    assert created
    gitlab.merge_request(PATH, mr.number).labels.append("needs-review")  # added by a person
    gitlab.requests.clear()

    mr2, created, closed = await ensure_pull_request(
        client, REPO, "image-updater-1", "main", "build: v2", "body v2", ["deps", "auto"]
    )
    assert not created and not closed and mr2.number == mr.number
    assert len(gitlab.merge_requests(PATH)) == 1
    stored = gitlab.merge_request(PATH, mr.number)
    assert (stored.title, stored.description) == ("build: v2", "body v2")
    assert stored.labels == ["deps", "needs-review", "auto"]
    put = gitlab.calls("PUT")[0]
    assert put.path == f"/api/v4/projects/{ENCODED}/merge_requests/{mr.number}"
    assert put.body == {"title": "build: v2", "description": "body v2", "add_labels": "auto"}
    assert not gitlab.calls("POST")


async def test_ensure_leaves_an_up_to_date_merge_request_alone(
    gitlab: GitLabFake, client: GitLabClient
) -> None:
    gitlab.add_merge_request(PATH, "image-updater-1", "main", "t", description="d", labels=["x"])
    _, created, _ = await ensure_pull_request(
        client, REPO, "image-updater-1", "main", "t", "d", ["x"]
    )
    assert not created
    assert [r.method for r in gitlab.requests] == ["GET"]


async def test_newer_head_closes_the_superseded_merge_request(
    gitlab: GitLabFake, client: GitLabClient
) -> None:
    old, _, _ = await ensure_pull_request(
        client, REPO, f"{PREFIX}aaa", "main", "build: v1", "", [], supersedes_prefix=PREFIX
    )
    other = gitlab.add_merge_request(PATH, "feature/x", "main", "someone's work")
    other_base = gitlab.add_merge_request(PATH, f"{PREFIX}ccc", "release", "release")
    fork = gitlab.add_merge_request(PATH, f"{PREFIX}ddd", "main", "fork", source_project_id=7)

    new, created, closed = await ensure_pull_request(
        client, REPO, f"{PREFIX}bbb", "main", "build: v2", "", [], supersedes_prefix=PREFIX
    )
    assert created
    assert [mr.number for mr in closed] == [old.number]
    closed_mr = gitlab.merge_request(PATH, old.number)
    assert closed_mr.state == "closed"
    assert closed_mr.notes == [f"Superseded by !{new.number}"]
    assert gitlab.calls("PUT")[0].body == {"state_event": "close"}
    for untouched in (other, other_base, fork):
        assert gitlab.merge_request(PATH, untouched.iid).state == "opened"
        assert gitlab.merge_request(PATH, untouched.iid).notes == []


async def test_labels_are_trimmed_and_deduplicated(
    gitlab: GitLabFake, client: GitLabClient
) -> None:
    mr, _, _ = await ensure_pull_request(
        client,
        REPO,
        "image-updater-1",
        "main",
        "title",
        "",
        ["image-update", " automated ", "", "image-update"],
    )
    assert gitlab.calls("POST")[0].body["labels"] == "image-update,automated"
    assert mr.labels == ("image-update", "automated")


async def test_title_and_body_are_truncated(gitlab: GitLabFake, client: GitLabClient) -> None:
    await ensure_pull_request(client, REPO, "image-updater-1", "main", "ü" * 256, "x" * 65537, [])
    stored = gitlab.merge_request(PATH, 1)
    assert stored.title == "ü" * 255 and len(stored.description) == 65536


async def test_bad_token_is_a_clear_error_without_the_token(gitlab: GitLabFake) -> None:
    wrong = "glpat-WrongTokenThatMustNotLeak99"
    async with GitLabClient(wrong, base_url=gitlab.url) as gl:
        with pytest.raises(ScmAuthError) as info:
            await gl.create(REPO, "update-1", "main", "title", "", [])
    message = str(info.value)
    assert info.value.status == 401
    assert "authentication failed (401 Unauthorized)" in message
    assert f"POST /api/v4/projects/{ENCODED}/merge_requests" in message
    assert wrong not in message and wrong not in repr(info.value)
    assert gitlab.merge_requests(PATH) == []


async def test_oauth_tokens_go_in_the_authorization_header(gitlab: GitLabFake) -> None:
    async with GitLabClient(TOKEN, base_url=gitlab.url, oauth=True) as gl:
        await gl.find_open(REPO, "x", "main")
    request = gitlab.requests[0]
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert "PRIVATE-TOKEN" not in request.headers


async def test_unknown_project_is_not_found(client: GitLabClient) -> None:
    with pytest.raises(ScmNotFoundError, match="404 Project Not Found"):
        await client.find_open(parse_repo_url("https://gitlab.example.com/g/nope"), "x", "main")


async def test_rate_limit_is_a_clear_error(gitlab: GitLabFake, client: GitLabClient) -> None:
    gitlab.rate_limit_next(reset_in=90)
    with pytest.raises(ScmRateLimitError) as info:
        await client.create(REPO, "update-1", "main", "title", "", [])
    assert info.value.status == 429 and info.value.retry_after == 90
    assert "rate limit exceeded (429 Retry later); retry in 90 s" in str(info.value)
    assert gitlab.merge_requests(PATH) == []


async def test_server_error_and_validation_messages(
    gitlab: GitLabFake, client: GitLabClient
) -> None:
    gitlab.fail_next(500)
    with pytest.raises(ScmError, match="500 Internal Server Error") as info:
        await client.find_open(REPO, "update-1", "main")
    assert info.value.status == 500
    with pytest.raises(ScmError, match="422 You can't use same project/branch"):
        await client.create(REPO, "main", "main", "title", "", [])
    gitlab.fail_next(400, {"message": {"title": ["is too long (maximum is 255 characters)"]}})
    with pytest.raises(ScmError, match="title is too long"):
        await client.create(REPO, "update-1", "main", "title", "", [])


async def test_list_open_by_prefix_follows_pages() -> None:
    async with GitLabFake(tokens=[TOKEN], projects=[PATH], page_size_cap=2) as gitlab:
        for i in range(5):
            gitlab.add_merge_request(PATH, f"{PREFIX}{i}", "main", f"mr {i}")
        gitlab.add_merge_request(PATH, "feature/x", "main", "someone's work")
        gitlab.add_merge_request(PATH, f"{PREFIX}old", "main", "old", state="closed")
        gitlab.add_merge_request(PATH, f"{PREFIX}merged", "main", "merged", state="merged")
        async with GitLabClient(TOKEN, base_url=gitlab.url) as gl:
            found = await gl.list_open_by_prefix(REPO, "main", PREFIX)
    assert sorted(mr.head for mr in found) == [f"{PREFIX}{i}" for i in range(5)]
    gets = gitlab.calls("GET")
    assert [g.query["page"] for g in gets] == ["1", "2", "3"]  # 6 open MRs into main, 2 per page
    assert all(g.query["per_page"] == "100" and g.query["state"] == "opened" for g in gets)
    assert all(g.query["target_branch"] == "main" for g in gets)


def test_base_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="https://"):
        GitLabClient(TOKEN, base_url="gitlab.com")


async def test_merge_button_lands_the_branch_and_an_empty_request_still_opens(tmp_path) -> None:
    """GitLab opens a merge request whatever its branches hold (also an empty or a missing
    source branch); merging lands the change in the target branch."""
    from argocd_image_updater_testing.git_servers import bare_repo, branch_commit, git, show

    home = tmp_path / "home"
    home.mkdir()
    git_dir = bare_repo(tmp_path / f"{PATH}.git", files={"a.txt": "1\n"})
    git("--git-dir", str(git_dir), "branch", "update-1", "main", home=home)
    async with (
        GitLabFake(tokens=[TOKEN], projects=[PATH], git_root=tmp_path) as gitlab,
        GitLabClient(TOKEN, base_url=gitlab.url) as client,
    ):
        empty = await client.create(REPO, "update-1", "main", "t", "", [])
        missing = await client.create(REPO, "gone", "main", "t", "", [])
        assert (empty.state, missing.state) == ("open", "open")
        merged = gitlab.merge_merge_request(PATH, empty.number, remove_source_branch=True)
        assert merged.state == "merged"
        assert branch_commit(git_dir, "update-1") is None
        assert show(git_dir, "main", "a.txt", home=home) == "1\n"
        assert await client.find_open(REPO, "update-1", "main") is None
