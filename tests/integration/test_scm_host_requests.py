"""What each of the Gitea, Bitbucket Cloud, Bitbucket Data Center and Azure DevOps clients sends:
paths, bodies and credentials of create, list, update, comment and close, as the hosts document
them, against their API stand-ins over HTTP."""

from __future__ import annotations

import asyncio
import base64
import contextlib

import httpx
import pytest

from argocd_image_updater.writeback.scm import (
    ScmError,
    client_for,
    ensure_pull_request,
    parse_repo_url,
)
from argocd_image_updater_testing.scm_azure_devops import AzureDevOpsFake
from argocd_image_updater_testing.scm_bitbucket import BitbucketCloudFake
from argocd_image_updater_testing.scm_bitbucket_server import BitbucketServerFake
from argocd_image_updater_testing.scm_gitea import GiteaFake

TOKEN = "tok-0123456789abcdefFakeToken"
PREFIX = "image-updater-1a2b3c4d-"


async def test_gitea_requests() -> None:
    repo = parse_repo_url("git@gitea.example.com:org/deploy.git")
    async with GiteaFake(tokens=[TOKEN], repos=[]) as gitea:
        gitea.add_repo("org/deploy", labels=["deps", "auto"])
        async with client_for("gitea", repo, TOKEN, api_url=gitea.api_url) as client:
            pr, created, _ = await ensure_pull_request(
                client, repo, f"{PREFIX}a", "main", "build: v1", "body", ["deps", "unknown"]
            )
            await ensure_pull_request(
                client, repo, f"{PREFIX}b", "main", "build: v2", "", [], supersedes_prefix=PREFIX
            )
    assert created
    post = gitea.calls("POST", "/pulls")[0]
    assert post.path == "/api/v1/repos/org/deploy/pulls"
    assert post.body == {"title": "build: v1", "head": f"{PREFIX}a", "base": "main", "body": "body"}
    assert post.headers["Authorization"] == f"token {TOKEN}"
    # labels by name through the issue API; a name the repository lacks is left out
    assert gitea.calls("POST", "/issues/1/labels")[0].body == {"labels": ["deps", "unknown"]}
    assert gitea.pull("org/deploy", pr.number).labels == ["deps"]
    assert gitea.calls("GET")[0].query == {"state": "open", "limit": "50"}
    assert gitea.calls("POST", "/issues/1/comments")[0].body == {"body": "Superseded by #2"}
    assert gitea.calls("PATCH", "/pulls/1")[-1].body == {"state": "closed"}


async def test_bitbucket_cloud_requests_with_an_app_password() -> None:
    repo = parse_repo_url("https://bitbucket.org/team/deploy.git")
    async with BitbucketCloudFake(app_passwords={"jdoe": TOKEN}, repos=["team/deploy"]) as bb:
        client = client_for("bitbucket", repo, TOKEN, api_url=bb.api_url, username="jdoe")
        async with client:
            await ensure_pull_request(client, repo, f"{PREFIX}a", "main", "build: v1", "b", [])
            await ensure_pull_request(client, repo, f"{PREFIX}a", "main", "build: v1", "b2", [])
            await ensure_pull_request(
                client, repo, f"{PREFIX}b", "main", "build: v2", "", [], supersedes_prefix=PREFIX
            )
    basic = base64.b64encode(f"jdoe:{TOKEN}".encode()).decode()
    assert all(r.headers["Authorization"] == f"Basic {basic}" for r in bb.requests)
    post = bb.calls("POST", "/pullrequests")[0]
    assert post.path == "/2.0/repositories/team/deploy/pullrequests"
    assert post.body == {
        "title": "build: v1",
        "description": "b",
        "source": {"branch": {"name": f"{PREFIX}a"}},
        "destination": {"branch": {"name": "main"}},
    }
    assert bb.calls("PUT")[0].body == {"title": "build: v1", "description": "b2"}
    assert bb.calls("POST", "/1/comments")[0].body == {"content": {"raw": "Superseded by #2"}}
    assert bb.calls("POST", "/1/decline")
    assert bb.pull("team/deploy", 1).state == "closed"
    query = bb.calls("GET")[-1].query
    assert query["q"] == f'destination.branch.name = "main" AND source.branch.name ~ "{PREFIX}"'


async def test_bitbucket_cloud_refuses_a_bad_query() -> None:
    async with BitbucketCloudFake(tokens=[TOKEN], repos=["team/deploy"]) as bb:
        bb.fail_next(400, {"type": "error", "error": {"message": "Invalid field name: 'x'"}})
        repo = parse_repo_url("https://bitbucket.org/team/deploy.git")
        async with client_for("bitbucket", repo, TOKEN, api_url=bb.api_url) as client:
            with pytest.raises(ScmError, match="400 Invalid field name"):
                await client.find_open(repo, "x", "main")


async def test_bitbucket_data_center_requests_name_the_version() -> None:
    repo = parse_repo_url("ssh://git@bitbucket.example.com:7999/plat/deploy.git")
    async with (
        BitbucketServerFake(tokens=[TOKEN], repos=["PLAT/deploy"]) as bb,
        client_for("bitbucketServer", repo, TOKEN, api_url=bb.api_url) as client,
    ):
        await ensure_pull_request(client, repo, f"{PREFIX}a", "main", "v1", "b", [])
        bb.pull("PLAT/deploy", 1).touch()  # someone else edited it in between
        await ensure_pull_request(client, repo, f"{PREFIX}a", "main", "v1", "b2", [])
        await ensure_pull_request(
            client, repo, f"{PREFIX}b", "main", "v2", "", [], supersedes_prefix=PREFIX
        )
        # a duplicate create is answered with 409 and found
        again = await client.create(repo, f"{PREFIX}b", "main", "v2", "", [])
    assert again.number == 2
    post = bb.calls("POST", "/pull-requests")[0]
    assert post.path == "/rest/api/1.0/projects/plat/repos/deploy/pull-requests"
    ref = {"slug": "deploy", "project": {"key": "plat"}}
    assert post.body == {
        "title": "v1",
        "description": "b",
        "fromRef": {"id": f"refs/heads/{PREFIX}a", "repository": ref},
        "toRef": {"id": "refs/heads/main", "repository": ref},
    }
    assert post.headers["Authorization"] == f"Bearer {TOKEN}"
    assert bb.calls("PUT")[0].body == {"version": 1, "title": "v1", "description": "b2"}
    assert bb.calls("POST", "/1/comments")[0].body == {"text": "Superseded by #2"}
    assert bb.calls("POST", "/1/decline")[0].query == {"version": "2"}
    first_get = bb.calls("GET")[0].query
    assert first_get["direction"] == "OUTGOING" and first_get["at"] == f"refs/heads/{PREFIX}a"
    assert bb.pull("PLAT/deploy", 1).state == "closed"


async def test_bitbucket_data_center_other_conflicts_are_errors(tmp_path) -> None:
    from argocd_image_updater_testing.git_servers import bare_repo, git

    home = tmp_path / "home"
    home.mkdir()
    git_dir = bare_repo(tmp_path / "PLAT" / "deploy.git", files={"a.txt": "1\n"})
    git("--git-dir", str(git_dir), "branch", "update-1", "main", home=home)
    repo = parse_repo_url("https://bitbucket.example.com/scm/PLAT/deploy.git")
    async with (
        BitbucketServerFake(tokens=[TOKEN], repos=["PLAT/deploy"], git_root=tmp_path) as bb,
        client_for("bitbucketServer", repo, TOKEN, api_url=bb.api_url) as client,
    ):
        with pytest.raises(ScmError, match=r"409 Repository .* is already up-to-date") as info:
            await client.create(repo, "update-1", "main", "t", "", [])
    assert info.value.status == 409 and bb.pulls("PLAT/deploy") == []


async def test_azure_devops_requests() -> None:
    repo = parse_repo_url("git@ssh.dev.azure.com:v3/contoso/Platform/deploy")
    async with AzureDevOpsFake(tokens=[TOKEN], repos=["contoso/Platform/deploy"]) as ado:
        api = ado.api_url("contoso/Platform/deploy")
        async with client_for("azureDevOps", repo, TOKEN, api_url=api) as client:
            pr, _, _ = await ensure_pull_request(
                client, repo, f"{PREFIX}a", "main", "v1", "b", ["deps"]
            )
            await ensure_pull_request(client, repo, f"{PREFIX}a", "main", "v1", "b", ["deps", "x"])
            await ensure_pull_request(
                client, repo, f"{PREFIX}b", "main", "v2", "", [], supersedes_prefix=PREFIX
            )
            again = await client.create(repo, f"{PREFIX}b", "main", "v2", "", [])
        assert pr.url == f"{ado.url}/contoso/Platform/_git/deploy/pullrequest/1"
    assert again.number == 2
    basic = base64.b64encode(f":{TOKEN}".encode()).decode()
    assert all(r.headers["Authorization"] == f"Basic {basic}" for r in ado.requests)
    assert all(r.query["api-version"] == "7.1" for r in ado.requests)
    post = ado.calls("POST", "/pullrequests")[0]
    assert post.path == "/contoso/Platform/_apis/git/repositories/deploy/pullrequests"
    assert post.body == {
        "sourceRefName": f"refs/heads/{PREFIX}a",
        "targetRefName": "refs/heads/main",
        "title": "v1",
        "description": "b",
        "labels": [{"name": "deps"}],
    }
    assert ado.calls("POST", "/pullrequests/1/labels")[0].body == {"name": "x"}
    thread = ado.calls("POST", "/pullrequests/1/threads")[0].body
    assert thread == {
        "comments": [{"parentCommentId": 0, "content": "Superseded by !2", "commentType": "text"}],
        "status": "closed",
    }
    assert ado.calls("PATCH", "/pullrequests/1")[-1].body == {"status": "abandoned"}
    assert ado.pull("contoso/Platform/deploy", 1).labels == ["deps", "x"]


async def test_azure_devops_sign_in_page_and_missing_api_version() -> None:
    repo = parse_repo_url("https://dev.azure.com/contoso/Platform/_git/deploy")
    async with AzureDevOpsFake(tokens=[TOKEN], repos=["contoso/Platform/deploy"]) as ado:
        ado.fail_next(203, "<html>Sign In</html>")
        api = ado.api_url("contoso/Platform/deploy")
        async with client_for("azureDevOps", repo, TOKEN, api_url=api) as client:
            with pytest.raises(ScmError, match=r"authentication failed \(203 sign-in page\)"):
                await client.find_open(repo, "x", "main")
        async with httpx.AsyncClient() as http:
            answer = await http.get(f"{api}/pullrequests", auth=("", TOKEN))
    assert answer.status_code == 400
    assert answer.json()["typeKey"] == "VssVersionNotSpecifiedException"


async def _endless_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers one request with a chunked JSON list that never ends (until the client closes)."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"1\r\n[\r\n"
    )
    block = b'{"number": 1, "head": {"ref": "x"}},' * 2000
    with contextlib.suppress(ConnectionError):
        while True:
            writer.write(b"%x\r\n%s\r\n" % (len(block), block))
            await writer.drain()


async def test_an_endless_answer_fails_the_request_at_the_size_limit() -> None:
    server = await asyncio.start_server(_endless_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    repo = parse_repo_url("git@gitea.example.com:org/deploy.git")
    try:
        async with client_for(
            "gitea", repo, TOKEN, api_url=f"http://127.0.0.1:{port}/api/v1"
        ) as client:
            with pytest.raises(ScmError, match="larger than 16 MiB"):
                await client.find_open(repo, f"{PREFIX}a", "main")
    finally:
        server.close()
