"""Git write-back through the controller: real git repositories, the Kubernetes API fake, the
real registry. One commit per repository and branch per cycle; only target bytes change. Every
test runs with one replica and with three sharing the work (``--sharding``, :mod:`replicas`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import pr_fleet, registries_conf
from replicas import REPLICAS, Replicas, start_replicas

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import (
    bare_repo,
    log_subjects,
    reject_next_pushes,
    show,
)
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 4, 1, tzinfo=UTC)

VALUES = """\
# Values for the shop chart.
global: &defaults
  pullPolicy: IfNotPresent   # keep

image:
  repository: '{image}'
  tag: "1.0.0"  # bumped by the updater
  <<: *defaults
replicas: 3
"""


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


async def setup(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    replicas: int,
    **flags: Any,
) -> tuple[str, Replicas]:
    """Push ``1.0.0`` and ``1.0.1`` of ``repo``; ``replicas`` controllers built as ``run``
    builds them (one: as always; more: sharded)."""
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.0.1"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    fleet = await start_replicas(
        replicas,
        kube,
        tmp_path,
        registries_conf_path=str(registries_conf(tmp_path, registry)),
        git_cache_dir=str(tmp_path / "clones"),
        git_commit_message_path=str(tmp_path / "no-template"),
        **flags,
    )
    return f"{registry.host}/{repo}", fleet


@REPLICAS
async def test_fifty_apps_in_one_repository_make_one_commit(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    replicas: int,
) -> None:
    image, fleet = await setup(kube, registry, repo, tmp_path, replicas)
    files = {
        f"apps/app{i:02d}/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            f"resources:\n- deployment.yaml\nimages:\n- name: {image}\n  newTag: 1.0.0\n"
        )
        for i in range(50)
    }
    remote = bare_repo(tmp_path / "deploy.git", files=files)
    url = f"file://{remote}"
    for i in range(50):
        kube.store.put(
            objects.application(
                f"app{i:02d}",
                NS,
                images=[f"{image}:1.0.0"],
                repo_url=url,
                path=f"apps/app{i:02d}",
                target_revision="main",
            )
        )
    kube.store.put(
        objects.image_updater(
            "fleet",
            NS,
            {
                "writeBackConfig": {
                    "method": "git",
                    "gitConfig": {"writeBackTarget": "kustomization"},
                },
                "applicationRefs": [
                    {"namePattern": "app*", "images": [{"alias": "web", "imageName": image}]}
                ],
            },
        )
    )
    try:
        result = await fleet.cycle()
    finally:
        await fleet.close()
    assert result.errors == 0 and result.images_updated == 50
    home = tmp_path / "home"
    home.mkdir()
    subjects = log_subjects(remote, "main", home=home)
    assert subjects == ["build: automatic update of 50 applications", "Initial commit"]
    for i in range(50):
        text = show(remote, "main", f"apps/app{i:02d}/kustomization.yaml", home=home)
        assert text == files[f"apps/app{i:02d}/kustomization.yaml"].replace("1.0.0", "1.0.1")
    # The Applications themselves were not patched (git method).
    assert kube.request_count("patch", "applications") == 0


@REPLICAS
async def test_helm_values_keep_comments_anchors_and_quoting(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    replicas: int,
) -> None:
    image, fleet = await setup(kube, registry, repo, tmp_path, replicas)
    values = VALUES.format(image=image)
    remote = bare_repo(tmp_path / "charts.git", files={"charts/shop/values.yaml": values})
    kube.store.put(
        objects.application(
            "shop",
            NS,
            source_type="Helm",
            images=[f"{image}:1.0.0"],
            helm_parameters={"image.repository": image, "image.tag": "1.0.0"},
            repo_url=f"file://{remote}",
            path="charts/shop",
            target_revision="main",
        )
    )
    kube.store.put(
        objects.image_updater(
            "shop",
            NS,
            {
                "writeBackConfig": {
                    "method": "git",
                    "gitConfig": {"writeBackTarget": "helmvalues"},
                },
                "applicationRefs": [
                    {
                        "namePattern": "shop",
                        "images": [
                            {
                                "alias": "shop",
                                "imageName": image,
                                "manifestTargets": {
                                    "helm": {"name": "image.repository", "tag": "image.tag"}
                                },
                            }
                        ],
                    }
                ],
            },
        )
    )
    try:
        result = await fleet.cycle()
    finally:
        await fleet.close()
    assert result.errors == 0 and result.images_updated == 1
    home = tmp_path / "home"
    home.mkdir()
    assert show(remote, "main", "charts/shop/values.yaml", home=home) == values.replace(
        'tag: "1.0.0"', 'tag: "1.0.1"'
    )


@REPLICAS
async def test_protected_branch_rejection_is_a_clear_error_without_retry_storm(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    replicas: int,
) -> None:
    image, fleet = await setup(kube, registry, repo, tmp_path, replicas)
    remote = bare_repo(
        tmp_path / "locked.git",
        files={"app/kustomization.yaml": f"images:\n- name: {image}\n  newTag: 1.0.0\n"},
    )
    reject_next_pushes(remote, 10, "branch main is protected")
    kube.store.put(
        objects.application(
            "locked",
            NS,
            images=[f"{image}:1.0.0"],
            repo_url=f"file://{remote}",
            path="app",
            target_revision="main",
        )
    )
    kube.store.put(
        objects.image_updater(
            "locked",
            NS,
            {
                "writeBackConfig": {
                    "method": "git",
                    "gitConfig": {"writeBackTarget": "kustomization"},
                },
                "applicationRefs": [
                    {"namePattern": "locked", "images": [{"alias": "a", "imageName": image}]}
                ],
            },
        )
    )
    try:
        result = await fleet.cycle()
    finally:
        await fleet.close()
    assert result.errors == 1 and result.images_updated == 0
    error = result.apps[0].error or ""
    assert "protected" in error
    from argocd_image_updater_testing.git_servers import push_attempts

    assert push_attempts(remote) == 1
    home = tmp_path / "home"
    home.mkdir()
    assert log_subjects(remote, "main", home=home) == ["Initial commit"]


@REPLICAS
async def test_pull_request_mode_opens_then_refreshes_and_supersedes(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    replicas: int,
) -> None:
    from argocd_image_updater_testing.git_servers import GitHttpServer
    from argocd_image_updater_testing.scm import GitHubFake

    token = "ghp_pr-mode-t0ken"
    image = f"{registry.host}/{repo}"
    root = tmp_path / "srv"
    root.mkdir()
    bare_repo(
        root / "org" / "deploy.git",
        files={"app/kustomization.yaml": f"images:\n- name: {image}\n  newTag: 1.0.0\n"},
    )
    with GitHttpServer(root, users={"bot": token}) as git_http:
        async with GitHubFake(tokens=[token], repos=["org/deploy"], enterprise=True) as github:
            pr_fleet(
                kube,
                image,
                git_http.url_for("org/deploy.git"),
                token,
                {"github": {}, "labels": ["automated", " automated "]},
            )
            _, fleet = await setup(
                kube, registry, repo, tmp_path, replicas, pr_api_url=f"{github.url}/api/v3"
            )
            try:
                first = await fleet.cycle()
                assert first.errors == 0, [a.error for a in first.apps]
                pulls = github.pulls("org/deploy")
                assert len(pulls) == 1 and pulls[0].state == "open"
                assert pulls[0].head.startswith("image-updater-") and pulls[0].base == "main"
                assert pulls[0].labels == ["automated"]
                # A newer tag: a new PR branch; the old PR is closed as superseded.
                await fleet.heard()  # sharded: the owner's word on the first cycle's copies
                async with ImagePusher(registry.url) as pusher:
                    await pusher.push_image(repo, "1.0.2", created=START + timedelta(days=9))
                second = await fleet.cycle()
                assert second.errors == 0, [a.error for a in second.apps]
                if not second.images_updated:  # a copy the owner vouched for: its next word
                    await fleet.heard()  # names the change
                    third = await fleet.cycle()
                    assert third.errors == 0 and third.images_updated == 1
            finally:
                await fleet.close()
            pulls = github.pulls("org/deploy")
            assert [p.state for p in pulls] == ["closed", "open"]
            home = tmp_path / "home"
            home.mkdir()
            head = pulls[1].head
            assert "newTag: 1.0.2" in (
                show(root / "org" / "deploy.git", head, "app/kustomization.yaml", home=home) or ""
            )
            assert log_subjects(root / "org" / "deploy.git", "main", home=home) == [
                "Initial commit"
            ]


@REPLICAS
async def test_application_grouping_makes_one_commit_per_app_in_one_push(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    replicas: int,
) -> None:
    from argocd_image_updater_testing.git_servers import push_attempts

    image, fleet = await setup(
        kube, registry, repo, tmp_path, replicas, git_commit_grouping="application"
    )
    files = {
        f"apps/a{i}/kustomization.yaml": f"images:\n- name: {image}\n  newTag: 1.0.0\n"
        for i in range(3)
    }
    remote = bare_repo(tmp_path / "per-app.git", files=files)
    for i in range(3):
        kube.store.put(
            objects.application(
                f"a{i}",
                NS,
                images=[f"{image}:1.0.0"],
                repo_url=f"file://{remote}",
                path=f"apps/a{i}",
                target_revision="main",
            )
        )
    kube.store.put(
        objects.image_updater(
            "per-app",
            NS,
            {
                "writeBackConfig": {
                    "method": "git",
                    "gitConfig": {"writeBackTarget": "kustomization"},
                },
                "applicationRefs": [
                    {"namePattern": "a*", "images": [{"alias": "web", "imageName": image}]}
                ],
            },
        )
    )
    try:
        result = await fleet.cycle()
    finally:
        await fleet.close()
    assert result.errors == 0 and result.images_updated == 3
    home = tmp_path / "home"
    home.mkdir()
    subjects = log_subjects(remote, "main", home=home)
    assert sorted(subjects[:3]) == [f"build: automatic update of a{i}" for i in range(3)]
    assert subjects[3:] == ["Initial commit"]
    assert push_attempts(remote) == 1


# --- changes that already landed: waiting for sync, merged pull requests -----------------------


def _waiting(result: Any) -> list[str]:
    return [r.reason for a in result.apps if a.plan is not None for r in a.plan.results]


@REPLICAS
async def test_second_cycle_on_an_unsynced_target_is_waiting_for_sync(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    replicas: int,
) -> None:
    from argocd_image_updater_testing.git_servers import push_attempts

    image, fleet = await setup(kube, registry, repo, tmp_path, replicas)
    remote = bare_repo(
        tmp_path / "unsynced.git",
        files={"app/kustomization.yaml": f"images:\n- name: {image}\n  newTag: 1.0.0\n"},
    )
    kube.store.put(
        objects.application(
            "unsynced",
            NS,
            images=[f"{image}:1.0.0"],
            repo_url=f"file://{remote}",
            path="app",
            target_revision="main",
        )
    )
    kube.store.put(
        objects.image_updater(
            "unsynced",
            NS,
            {
                "writeBackConfig": {
                    "method": "git",
                    "gitConfig": {"writeBackTarget": "kustomization"},
                },
                "applicationRefs": [
                    {"namePattern": "unsynced", "images": [{"alias": "web", "imageName": image}]}
                ],
            },
        )
    )
    try:
        first = await fleet.cycle()
        assert first.images_updated == 1 and first.errors == 0
        events = kube.request_count("create", "events")
        caplog.clear()
        # Argo CD has not synced: the Application still runs 1.0.0.
        second = await fleet.cycle()
    finally:
        await fleet.close()
    assert second.images_updated == 0 and second.errors == 0
    assert _waiting(second) == ["waiting-for-sync"]
    (result,) = second.apps[0].plan.results  # type: ignore[union-attr]
    assert "already written to branch main" in result.message
    assert not second.apps[0].written
    assert not [r for r in caplog.records if "Successfully updated" in r.getMessage()]
    assert kube.request_count("create", "events") == events  # no repeated event
    status = kube.store.get("imageupdaters", NS, "unsynced")["status"]
    images = next(c for c in status["conditions"] if c["type"] == "ImagesUpToDate")
    assert images["reason"] == "WaitingForSync" and "waiting-for-sync" in images["message"]
    home = tmp_path / "home"
    home.mkdir()
    assert len(log_subjects(remote, "main", home=home)) == 2  # one update commit, no more
    assert push_attempts(remote) == 1


LANDINGS = [
    pytest.param(None, id="pull-request-still-open"),
    pytest.param((False, False), id="merge-commit"),
    pytest.param((True, False), id="squash"),
    pytest.param((False, True), id="merge-commit-head-deleted"),
    pytest.param((True, True), id="squash-head-deleted"),
]


@pytest.mark.parametrize("landing", LANDINGS)
@REPLICAS
async def test_github_merged_or_open_pull_request_is_waiting_for_sync(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    landing: tuple[bool, bool] | None,
    replicas: int,
) -> None:
    from argocd_image_updater_testing.git_servers import GitHttpServer, push_attempts
    from argocd_image_updater_testing.scm import GitHubFake

    token = "ghp_landed-t0ken"
    image = f"{registry.host}/{repo}"
    root = tmp_path / "srv"
    remote = bare_repo(
        root / "org" / "deploy.git",
        files={"app/kustomization.yaml": f"images:\n- name: {image}\n  newTag: 1.0.0\n"},
    )
    with GitHttpServer(root, users={"bot": token}) as git_http:
        async with GitHubFake(
            tokens=[token], repos=["org/deploy"], enterprise=True, git_root=root
        ) as github:
            pr_fleet(kube, image, git_http.url_for("org/deploy.git"), token, {"github": {}})
            _, fleet = await setup(
                kube, registry, repo, tmp_path, replicas, pr_api_url=github.api_url
            )
            try:
                first = await fleet.cycle()
                assert first.errors == 0 and first.images_updated == 1, first.apps[0].error
                (pull,) = github.pulls("org/deploy")
                if landing is not None:
                    squash, delete_head = landing
                    github.merge_pull(
                        "org/deploy", pull.number, squash=squash, delete_head=delete_head
                    )
                pushes, creates = push_attempts(remote), len(github.calls("POST", "/pulls"))
                requests = len(github.requests)
                second = await fleet.cycle()
            finally:
                await fleet.close()
            assert second.errors == 0, second.apps[0].error
            assert second.images_updated == 0
            assert _waiting(second) == ["waiting-for-sync"]
            assert push_attempts(remote) == pushes  # nothing pushed
            assert len(github.calls("POST", "/pulls")) == creates  # no pull request opened
            assert len(github.pulls("org/deploy")) == 1
            message = second.apps[0].plan.results[0].message  # type: ignore[union-attr]
            if landing is None:
                assert f"branch {pull.head} " in message and "to be merged" in message
            else:
                assert "already written to branch main " in message
                # Nothing at all is asked of GitHub once the target branch holds the change.
                assert len(github.requests) == requests


@pytest.mark.parametrize("landing", LANDINGS)
@REPLICAS
async def test_gitlab_merged_or_open_merge_request_is_waiting_for_sync(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    landing: tuple[bool, bool] | None,
    replicas: int,
) -> None:
    from argocd_image_updater_testing.git_servers import GitHttpServer, push_attempts
    from argocd_image_updater_testing.scm import GitLabFake

    token = "glpat-landed-t0ken"
    image = f"{registry.host}/{repo}"
    root = tmp_path / "srv"
    remote = bare_repo(
        root / "org" / "deploy.git",
        files={"app/kustomization.yaml": f"images:\n- name: {image}\n  newTag: 1.0.0\n"},
    )
    with GitHttpServer(root, users={"bot": token}) as git_http:
        async with GitLabFake(tokens=[token], projects=["org/deploy"], git_root=root) as gitlab:
            pr_fleet(kube, image, git_http.url_for("org/deploy.git"), token, {"gitlab": {}})
            _, fleet = await setup(kube, registry, repo, tmp_path, replicas, pr_api_url=gitlab.url)
            try:
                first = await fleet.cycle()
                assert first.errors == 0 and first.images_updated == 1, first.apps[0].error
                (mr,) = gitlab.merge_requests("org/deploy")
                if landing is not None:
                    squash, delete_head = landing
                    gitlab.merge_merge_request(
                        "org/deploy", mr.iid, squash=squash, remove_source_branch=delete_head
                    )
                pushes = push_attempts(remote)
                requests = len(gitlab.requests)
                second = await fleet.cycle()
            finally:
                await fleet.close()
            assert second.errors == 0, second.apps[0].error
            assert second.images_updated == 0
            assert _waiting(second) == ["waiting-for-sync"]
            assert push_attempts(remote) == pushes
            assert len(gitlab.merge_requests("org/deploy")) == 1  # no second, empty request
            assert not gitlab.calls("POST", "/merge_requests")[1:]
            if landing is not None:
                assert len(gitlab.requests) == requests  # no API call at all
