"""The Kubernetes API fake, driven over its socket by the real client library (kubernetes_asyncio)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client import ApiClient, ApiException, Configuration

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer, KubeError, KubeStore

TOKEN = "sandbox-token"
NS = "argocd"
APP = ("argoproj.io", "v1alpha1", NS, "applications")
IU = ("argocd-image-updater.argoproj.io", "v1alpha1", NS, "imageupdaters")
MERGE = "application/merge-patch+json"
CONFLICT = (
    'Operation cannot be fulfilled on applications.argoproj.io "app": the object has been '
    "modified; please apply your changes to the latest version and try again"
)


async def connect(kube: KubeApiServer, tmp_path: Path) -> ApiClient:
    path = kube.write_kubeconfig(tmp_path / f"kubeconfig-{kube.port}", namespace=NS)
    cfg = Configuration()
    await config.load_kube_config(config_file=str(path), client_configuration=cfg)
    return ApiClient(cfg)


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(token=TOKEN) as server:
        yield server


@pytest.fixture
async def api(kube: KubeApiServer, tmp_path: Path) -> AsyncIterator[ApiClient]:
    async with await connect(kube, tmp_path) as api_client:
        yield api_client


@pytest.fixture
def co(api: ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["code"] == exc.status
    return body


async def fails(call: Awaitable[Any], code: int) -> dict[str, Any]:
    with pytest.raises(ApiException) as info:
        await call
    assert info.value.status == code, info.value.body
    return status_of(info.value)


async def collect(
    stream: Any, until: Callable[[list[dict[str, Any]]], bool] | None = None
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with stream:
        async for event in stream:
            events.append(event)
            if until and until(events):
                break
    return events


async def wait_for(condition: Callable[[], bool], within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


# --- discovery, auth, kubeconfig ----------------------------------------------------------------


async def test_discovery_lists_the_resources(api: ApiClient) -> None:
    assert (await client.VersionApi(api).get_code()).git_version.startswith("v1.")
    assert (await client.CoreApi(api).get_api_versions()).versions == ["v1"]
    core = {r.name for r in (await client.CoreV1Api(api).get_api_resources()).resources}
    assert {"namespaces", "secrets", "configmaps", "events"} <= core
    groups = {g.name for g in (await client.ApisApi(api).get_api_versions()).groups}
    assert {
        "argoproj.io",
        "argocd-image-updater.argoproj.io",
        "coordination.k8s.io",
        "events.k8s.io",
    } <= groups
    leases = await client.CoordinationV1Api(api).get_api_resources()
    assert [r.name for r in leases.resources] == ["leases"]


async def test_discovery_shows_the_status_subresource(kube: KubeApiServer) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=kube.url, headers=headers) as http:
        doc = (await http.get("/apis/argocd-image-updater.argoproj.io/v1alpha1")).json()
        apps = (await http.get("/apis/argoproj.io/v1alpha1")).json()
    names = {r["name"]: r for r in doc["resources"]}
    assert names["imageupdaters"]["kind"] == "ImageUpdater"
    assert names["imageupdaters/status"]["verbs"] == ["get", "patch", "update"]
    assert [r["name"] for r in apps["resources"]] == ["applications"]
    assert apps["resources"][0]["shortNames"] == ["app", "apps"]


async def test_a_token_is_required_when_configured(kube: KubeApiServer) -> None:
    async with httpx.AsyncClient(base_url=kube.url) as http:
        response = await http.get("/api/v1/namespaces")
        wrong = await http.get("/api/v1/namespaces", headers={"Authorization": "Bearer nope"})
        health = await http.get("/healthz")
    assert response.status_code == 401 and wrong.status_code == 401
    assert response.json()["reason"] == "Unauthorized"
    assert health.text == "ok"


def test_runs_in_a_thread_for_sync_callers(tmp_path: Path) -> None:
    kube = KubeApiServer().start_in_thread()
    try:
        kube.store.put(objects.application("app"))
        response = httpx.get(f"{kube.url}/apis/argoproj.io/v1alpha1/namespaces/argocd/applications")
        assert [i["metadata"]["name"] for i in response.json()["items"]] == ["app"]
        config_text = kube.write_kubeconfig(tmp_path / "kc").read_text()
        assert kube.url in config_text
    finally:
        kube.stop()


# --- CRUD ---------------------------------------------------------------------------------------


async def test_create_get_replace_delete(co: client.CustomObjectsApi) -> None:
    created = await co.create_namespaced_custom_object(*APP, objects.application("app"))
    meta = created["metadata"]
    assert meta["generation"] == 1 and meta["uid"] and meta["creationTimestamp"].endswith("Z")
    again = await fails(co.create_namespaced_custom_object(*APP, objects.application("app")), 409)
    assert again["reason"] == "AlreadyExists"
    assert again["message"] == 'applications.argoproj.io "app" already exists'
    got = await co.get_namespaced_custom_object(*APP, "app")
    assert got == created
    got["spec"]["project"] = "other"
    replaced = await co.replace_namespaced_custom_object(*APP, "app", got)
    assert int(replaced["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    assert replaced["metadata"]["uid"] == meta["uid"] and replaced["spec"]["project"] == "other"
    deleted = await co.delete_namespaced_custom_object(*APP, "app")
    assert deleted["metadata"]["name"] == "app"
    missing = await fails(co.get_namespaced_custom_object(*APP, "app"), 404)
    assert missing["reason"] == "NotFound"
    assert missing["message"] == 'applications.argoproj.io "app" not found'
    assert missing["details"] == {"name": "app", "group": "argoproj.io", "kind": "applications"}


async def test_generate_name_and_missing_namespace(co: client.CustomObjectsApi) -> None:
    body = objects.application("x")
    body["metadata"] = {"generateName": "app-"}
    created = await co.create_namespaced_custom_object(*APP, body)
    assert created["metadata"]["name"].startswith("app-") and len(created["metadata"]["name"]) == 9
    group, version, _, plural = APP
    status = await fails(
        co.create_namespaced_custom_object(
            group, version, "nowhere", plural, objects.application("a", "nowhere")
        ),
        404,
    )
    assert status["message"] == 'namespaces "nowhere" not found'


async def test_list_with_label_and_field_selectors(
    api: ApiClient, co: client.CustomObjectsApi, kube: KubeApiServer
) -> None:
    await client.CoreV1Api(api).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name="team"))
    )
    for name, labels in (("a1", {"team": "a"}), ("b1", {"team": "b"}), ("none", {})):
        await co.create_namespaced_custom_object(*APP, objects.application(name, labels=labels))
    group, version, _, plural = APP
    await co.create_namespaced_custom_object(
        group, version, "team", plural, objects.application("a2", "team", labels={"team": "a"})
    )

    async def names(selector: str = "", fields: str = "") -> list[str]:
        result = await co.list_namespaced_custom_object(
            *APP, label_selector=selector, field_selector=fields
        )
        return [i["metadata"]["name"] for i in result["items"]]

    assert await names("team=a") == ["a1"]
    assert await names("team==b") == ["b1"]
    assert await names("team!=a") == ["b1", "none"]
    assert await names("team in (a, b)") == ["a1", "b1"]
    assert await names("team notin (a)") == ["b1", "none"]
    assert await names("team") == ["a1", "b1"]
    assert await names("!team") == ["none"]
    assert await names(fields="metadata.name=b1") == ["b1"]
    assert await names(fields="metadata.name!=b1") == ["a1", "none"]
    everywhere = await co.list_cluster_custom_object(
        group, version, plural, label_selector="team=a"
    )
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere["items"]] == [
        ("argocd", "a1"),
        ("team", "a2"),
    ]
    assert everywhere["metadata"]["resourceVersion"] == kube.store.resource_version
    bad = await fails(co.list_namespaced_custom_object(*APP, field_selector="spec.project=x"), 400)
    assert "spec.project" in bad["message"]


async def test_list_pagination(co: client.CustomObjectsApi) -> None:
    for i in range(5):
        await co.create_namespaced_custom_object(*APP, objects.application(f"app{i}"))
    page = await co.list_namespaced_custom_object(*APP, limit=2)
    seen = [i["metadata"]["name"] for i in page["items"]]
    while page["metadata"].get("continue"):
        page = await co.list_namespaced_custom_object(
            *APP, limit=2, _continue=page["metadata"]["continue"]
        )
        seen += [i["metadata"]["name"] for i in page["items"]]
    assert seen == [f"app{i}" for i in range(5)]


# --- optimistic concurrency and patches ---------------------------------------------------------


async def test_stale_resource_version_on_put_is_a_conflict(co: client.CustomObjectsApi) -> None:
    await co.create_namespaced_custom_object(*APP, objects.application("app"))
    first = await co.get_namespaced_custom_object(*APP, "app")
    second = await co.get_namespaced_custom_object(*APP, "app")
    first["spec"]["project"] = "one"
    await co.replace_namespaced_custom_object(*APP, "app", first)
    second["spec"]["project"] = "two"
    status = await fails(co.replace_namespaced_custom_object(*APP, "app", second), 409)
    assert status["reason"] == "Conflict" and status["message"] == CONFLICT
    assert status["details"] == {"name": "app", "group": "argoproj.io", "kind": "applications"}
    del second["metadata"]["resourceVersion"]
    status = await fails(co.replace_namespaced_custom_object(*APP, "app", second), 422)
    assert status["details"]["causes"][0]["field"] == "metadata.resourceVersion"


async def test_merge_patch_carrying_a_stale_resource_version_is_a_conflict(
    co: client.CustomObjectsApi,
) -> None:
    created = await co.create_namespaced_custom_object(*APP, objects.application("app"))
    rv = created["metadata"]["resourceVersion"]
    patch = {"metadata": {"resourceVersion": rv}, "spec": {"project": "p1"}}
    patched = await co.patch_namespaced_custom_object(*APP, "app", patch, _content_type=MERGE)
    assert patched["spec"]["project"] == "p1" and patched["metadata"]["resourceVersion"] != rv
    patch["spec"] = {"project": "p2"}
    status = await fails(
        co.patch_namespaced_custom_object(*APP, "app", patch, _content_type=MERGE), 409
    )
    assert status["message"] == CONFLICT
    unconditional = await co.patch_namespaced_custom_object(
        *APP, "app", {"spec": {"project": "p3"}}, _content_type=MERGE
    )
    assert unconditional["spec"]["project"] == "p3"


async def test_json_patch_with_a_failing_test_is_rejected(co: client.CustomObjectsApi) -> None:
    await co.create_namespaced_custom_object(*APP, objects.application("app", source_type="Helm"))
    ops = [
        {"op": "test", "path": "/spec/project", "value": "default"},
        {
            "op": "add",
            "path": "/spec/source/helm",
            "value": {"parameters": [{"name": "image.tag", "value": "1.1"}]},
        },
    ]
    patched = await co.patch_namespaced_custom_object(*APP, "app", ops)
    assert patched["spec"]["source"]["helm"]["parameters"][0]["value"] == "1.1"
    ops[0]["value"] = "not-the-project"
    status = await fails(co.patch_namespaced_custom_object(*APP, "app", ops), 422)
    assert status["reason"] == "Invalid"
    assert status["message"] == "the server rejected our request due to an error in our request"
    ops = [{"op": "remove", "path": "/spec/nothing"}]
    await fails(co.patch_namespaced_custom_object(*APP, "app", ops), 422)
    # kubernetes_asyncio sends a dict as a JSON patch to custom objects unless told otherwise
    await fails(co.patch_namespaced_custom_object(*APP, "app", {"spec": {}}), 400)


async def test_strategic_merge_patch(api: ApiClient, kube: KubeApiServer) -> None:
    kube.store.put(objects.application("app"))
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/strategic-merge-patch+json",
    }
    async with httpx.AsyncClient(base_url=kube.url, headers=headers) as http:
        response = await http.patch(
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/app", json={"spec": {}}
        )
    assert response.status_code == 415 and response.json()["reason"] == "UnsupportedMediaType"
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"), data={"a": "1"})
    )
    patched = await core.patch_namespaced_config_map("cm", NS, {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}


# --- generation, status subresource ------------------------------------------------------------


async def test_generation_follows_spec_changes_only(co: client.CustomObjectsApi) -> None:
    created = await co.create_namespaced_custom_object(*IU, objects.image_updater("iu"))
    assert created["metadata"]["generation"] == 1
    labelled = await co.patch_namespaced_custom_object(
        *IU, "iu", {"metadata": {"labels": {"a": "b"}}}, _content_type=MERGE
    )
    assert labelled["metadata"]["generation"] == 1
    assert labelled["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    status = {"status": {"applicationsMatched": 3}}
    with_status = await co.patch_namespaced_custom_object_status(
        *IU, "iu", status, _content_type=MERGE
    )
    assert (
        with_status["metadata"]["generation"] == 1
        and with_status["status"]["applicationsMatched"] == 3
    )
    spec = {"spec": {"commonUpdateSettings": {"updateStrategy": "digest"}}}
    changed = await co.patch_namespaced_custom_object(*IU, "iu", spec, _content_type=MERGE)
    assert changed["metadata"]["generation"] == 2
    # Applications have no status subresource: like a real apiserver, any change outside
    # metadata counts
    await co.create_namespaced_custom_object(*APP, objects.application("app"))
    app = await co.patch_namespaced_custom_object(
        *APP, "app", {"status": {"health": {"status": "Degraded"}}}, _content_type=MERGE
    )
    assert app["metadata"]["generation"] == 2


async def test_status_subresource_is_separate(co: client.CustomObjectsApi) -> None:
    body = objects.image_updater("iu")
    body["status"] = {"imagesManaged": 7}
    created = await co.create_namespaced_custom_object(*IU, body)
    assert "status" not in created  # dropped on create
    created["status"] = {"imagesManaged": 1}
    created["spec"]["commonUpdateSettings"] = {"forceUpdate": True}
    replaced = await co.replace_namespaced_custom_object(*IU, "iu", created)
    assert "status" not in replaced and replaced["spec"]["commonUpdateSettings"] == {
        "forceUpdate": True
    }
    replaced["status"] = {"imagesManaged": 2}
    replaced["spec"]["commonUpdateSettings"] = {"forceUpdate": False}
    replaced["metadata"]["labels"] = {"ignored": "yes"}
    status = await co.replace_namespaced_custom_object_status(*IU, "iu", replaced)
    assert status["status"] == {"imagesManaged": 2}
    assert status["spec"]["commonUpdateSettings"] == {"forceUpdate": True}
    assert "labels" not in status["metadata"]
    got = await co.get_namespaced_custom_object_status(*IU, "iu")
    assert got["status"] == {"imagesManaged": 2}


async def test_a_no_op_write_keeps_the_resource_version(co: client.CustomObjectsApi) -> None:
    created = await co.create_namespaced_custom_object(*APP, objects.application("app"))
    same = await co.replace_namespaced_custom_object(*APP, "app", created)
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_finalizers_delay_deletion(co: client.CustomObjectsApi) -> None:
    body = objects.image_updater("iu")
    body["metadata"]["finalizers"] = ["resources-finalizer.argocd-image-updater.argoproj.io"]
    await co.create_namespaced_custom_object(*IU, body)
    marked = await co.delete_namespaced_custom_object(*IU, "iu")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["generation"] == 2
    assert (await co.get_namespaced_custom_object(*IU, "iu"))["metadata"]["deletionTimestamp"]
    await co.patch_namespaced_custom_object(
        *IU, "iu", [{"op": "remove", "path": "/metadata/finalizers"}]
    )
    await fails(co.get_namespaced_custom_object(*IU, "iu"), 404)


async def test_dry_run_stores_nothing(co: client.CustomObjectsApi) -> None:
    created = await co.create_namespaced_custom_object(
        *APP, objects.application("app"), dry_run="All"
    )
    assert created["metadata"]["name"] == "app"
    await fails(co.get_namespaced_custom_object(*APP, "app"), 404)


# --- watch --------------------------------------------------------------------------------------


async def test_watch_from_a_resource_version_sees_every_change_in_order(
    co: client.CustomObjectsApi,
) -> None:
    listed = await co.list_namespaced_custom_object(*APP)
    await co.create_namespaced_custom_object(*APP, objects.application("app"))
    await co.patch_namespaced_custom_object(
        *APP, "app", {"spec": {"project": "x"}}, _content_type=MERGE
    )
    await co.delete_namespaced_custom_object(*APP, "app")
    stream = watch.Watch().stream(
        co.list_namespaced_custom_object,
        *APP,
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=5,
    )
    events = await collect(stream, until=lambda e: len(e) == 3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert events[1]["object"]["spec"]["project"] == "x"


async def test_watch_without_resource_version_starts_with_the_current_objects(
    co: client.CustomObjectsApi, kube: KubeApiServer
) -> None:
    kube.store.put(objects.application("one"))
    kube.store.put(objects.application("two"))
    stream = watch.Watch().stream(co.list_namespaced_custom_object, *APP, timeout_seconds=5)
    events: list[dict[str, Any]] = []

    async def consume() -> None:
        events.extend(await collect(stream, until=lambda e: len(e) == 3))

    task = asyncio.create_task(consume())
    await wait_for(lambda: kube.store.watchers == 1)
    kube.store.patch("applications", NS, "two", {"spec": {"project": "changed"}})  # direct change
    await asyncio.wait_for(task, 5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "one"),
        ("ADDED", "two"),
        ("MODIFIED", "two"),
    ]


async def test_watch_ends_after_timeout_seconds(co: client.CustomObjectsApi) -> None:
    started = time.monotonic()
    events = await asyncio.wait_for(  # the server ends it: a hang fails here, not a clock bound
        collect(watch.Watch().stream(co.list_namespaced_custom_object, *APP, timeout_seconds=1)),
        30,
    )
    elapsed = time.monotonic() - started
    assert events == [] and elapsed >= 0.9


async def test_watch_from_a_compacted_resource_version_is_gone(
    co: client.CustomObjectsApi, kube: KubeApiServer
) -> None:
    kube.store.put(objects.application("app"))
    old = kube.store.resource_version
    kube.store.put(objects.application("app2"))
    kube.store.compact()
    stream = watch.Watch().stream(
        co.list_namespaced_custom_object, *APP, resource_version=old, timeout_seconds=5
    )
    with pytest.raises(ApiException) as info:
        await collect(stream)
    assert info.value.status == 410 and "too old resource version" in info.value.reason


async def test_watch_selector_transitions(co: client.CustomObjectsApi, kube: KubeApiServer) -> None:
    kube.store.put(objects.application("app", labels={"team": "a"}))
    start = kube.store.resource_version
    kube.store.patch("applications", NS, "app", {"metadata": {"labels": {"team": "b"}}})
    kube.store.patch("applications", NS, "app", {"spec": {"project": "unseen"}})
    kube.store.patch("applications", NS, "app", {"metadata": {"labels": {"team": "a"}}})
    stream = watch.Watch().stream(
        co.list_namespaced_custom_object,
        *APP,
        label_selector="team=a",
        resource_version=start,
        timeout_seconds=5,
    )
    events = await collect(stream, until=lambda e: len(e) == 2)
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


async def test_watch_bookmarks(tmp_path: Path) -> None:
    async with KubeApiServer(bookmark_interval=0.2) as kube:
        kube.store.put(objects.application("app"))
        async with await connect(kube, tmp_path) as api:
            co = client.CustomObjectsApi(api)
            stream = watch.Watch().stream(
                co.list_namespaced_custom_object,
                *APP,
                allow_watch_bookmarks=True,
                timeout_seconds=3,
            )
            events = await collect(stream, until=lambda e: len(e) == 2)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["raw_object"]["metadata"]["resourceVersion"] == kube.store.resource_version


# --- schema validation --------------------------------------------------------------------------

REF: dict[str, Any] = {
    "namePattern": "app-*",
    "images": [{"alias": "web", "imageName": "nginx:1.x"}],
}


def _ref(**image: Any) -> dict[str, Any]:
    return {"namePattern": "app-*", "images": [{"alias": "web", "imageName": "nginx:1.x", **image}]}


@pytest.mark.parametrize(
    ("spec", "field", "text"),
    [
        ({}, "spec.applicationRefs", "Required value"),
        ({"applicationRefs": []}, "spec.applicationRefs", "should have at least 1 items"),
        (
            {"applicationRefs": [_ref(alias="web/app")]},
            "spec.applicationRefs[0].images[0].alias",
            "should match",
        ),
        (
            {
                "applicationRefs": [
                    _ref(manifestTargets={"helm": {"name": "a"}, "kustomize": {"name": "b"}})
                ]
            },
            "spec.applicationRefs[0].images[0].manifestTargets",
            "Exactly one of helm, kustomize, or plugin",
        ),
        (
            {"applicationRefs": [_ref(manifestTargets={"plugin": {"tag": "T"}})]},
            "spec.applicationRefs[0].images[0].manifestTargets.plugin",
            "At least one of spec or name",
        ),
        (
            {"applicationRefs": [{"namePattern": "x"}]},
            "spec.applicationRefs[0]",
            "Either useAnnotations must be true",
        ),
        ({"applicationRefs": [REF, REF]}, "spec.applicationRefs[1]", "Duplicate value"),
        (
            {"applicationRefs": [REF], "writeBackConfig": {"method": "svn"}},
            "spec.writeBackConfig.method",
            "should match",
        ),
        (
            {"applicationRefs": [REF], "imagesVerification": {}},
            "spec.imagesVerification",
            "at least one verification method (cosignKey or keyless)",
        ),
        (
            {"applicationRefs": [REF], "imagesVerification": {"keyless": {"issuer": "i"}}},
            "spec.imagesVerification.keyless.identity",
            "Required value",
        ),
        (
            {
                "applicationRefs": [REF],
                "imagesVerification": {
                    "keyless": {"issuer": "i", "identity": "a@b.c"},
                    "trustedRoot": {"configMapName": "", "key": "k"},
                },
            },
            "spec.imagesVerification.trustedRoot.configMapName",
            "should be at least 1 chars long",
        ),
        (
            {
                "applicationRefs": [REF],
                "writeBackConfig": {"gitConfig": {"pullRequest": {"github": {}, "gitlab": {}}}},
            },
            "spec.writeBackConfig.gitConfig.pullRequest",
            "Exactly one of github, gitlab, gitea, bitbucket, bitbucketServer or azureDevOps "
            "must be set",
        ),
        (
            {
                "applicationRefs": [REF],
                "writeBackConfig": {"gitConfig": {"pullRequest": {"gitea": {"apiURL": "git.lan"}}}},
            },
            "spec.writeBackConfig.gitConfig.pullRequest.gitea.apiURL",
            "should match",
        ),
        (
            {"applicationRefs": [REF], "commonUpdateSettings": {"forceUpdate": "yes"}},
            "spec.commonUpdateSettings.forceUpdate",
            "must be of type boolean",
        ),
        (
            {"applicationRefs": [REF], "commonUpdateSettings": {"ignoreTags": "*"}},
            "spec.commonUpdateSettings.ignoreTags",
            "must be of type array",
        ),
    ],
)
async def test_malformed_image_updaters_are_rejected(
    co: client.CustomObjectsApi, spec: dict[str, Any], field: str, text: str
) -> None:
    status = await fails(
        co.create_namespaced_custom_object(*IU, objects.image_updater("iu", spec=spec)), 422
    )
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(
        'ImageUpdater.argocd-image-updater.argoproj.io "iu" is invalid: '
    )
    assert status["details"]["kind"] == "ImageUpdater"
    causes = {c["field"]: c["message"] for c in status["details"]["causes"]}
    assert field in causes and text in causes[field], causes
    assert f"{field}: " in status["message"]


async def test_pruning_defaults_and_field_validation(
    co: client.CustomObjectsApi, kube: KubeApiServer
) -> None:
    spec = {
        "namespace": "removed-field",
        "applicationRefs": [
            {**_ref(imagesVerification={"cosignKey": {"secretName": "s", "key": "k"}}), "extra": 1}
        ],
    }
    created = await co.create_namespaced_custom_object(*IU, objects.image_updater("iu", spec=spec))
    assert (
        "namespace" not in created["spec"] and "extra" not in created["spec"]["applicationRefs"][0]
    )
    assert created["spec"]["applicationRefs"][0]["useAnnotations"] is False
    assert (
        created["spec"]["applicationRefs"][0]["images"][0]["imagesVerification"]["enabled"] is True
    )
    headers = {"Authorization": f"Bearer {TOKEN}"}
    url = "/apis/argocd-image-updater.argoproj.io/v1alpha1/namespaces/argocd/imageupdaters"
    async with httpx.AsyncClient(base_url=kube.url, headers=headers) as http:
        warned = await http.post(url, json=objects.image_updater("iu2", spec=spec))
        strict = await http.post(
            url, params={"fieldValidation": "Strict"}, json=objects.image_updater("iu3", spec=spec)
        )
    assert warned.status_code == 201
    assert warned.headers.get_list("Warning") == [
        '299 - "unknown field \\"spec.namespace\\""',
        '299 - "unknown field \\"spec.applicationRefs[0].extra\\""',
    ]
    assert (
        strict.status_code == 400 and 'unknown field "spec.namespace"' in strict.json()["message"]
    )


async def test_keyless_alone_satisfies_the_verification_rule(co: client.CustomObjectsApi) -> None:
    keyless = {"keyless": {"issuer": "https://issuer.example", "identity": "regexp:.*@example.com"}}
    spec = {"imagesVerification": keyless, "applicationRefs": [_ref(imagesVerification=keyless)]}
    created = await co.create_namespaced_custom_object(*IU, objects.image_updater("iu", spec=spec))
    assert created["spec"]["imagesVerification"] == {**keyless, "enabled": True}


@pytest.mark.parametrize(
    "app",
    [
        objects.application(
            "kustomize", images=["nginx:1.25"], kustomize_images=["nginx=nginx:1.25"]
        ),
        objects.application(
            "helm", source_type="Helm", chart="web", helm_parameters={"image.tag": "1.0"}
        ),
        objects.application("plugin", source_type="Plugin", plugin_env={"IMAGE": "a:1"}),
        objects.application(
            "directory", source_type="Directory", labels={"a": "b"}, annotations={"x/y": "z"}
        ),
        objects.application(
            "multi",
            sources=[
                objects.source(
                    source_type="Helm", chart="web", repo_url="https://charts.example.com"
                ),
                objects.source(kustomize_images=["web=web:2"]),
            ],
        ),
    ],
    ids=lambda app: app["metadata"]["name"],
)
def test_application_builders_pass_the_schema(app: dict[str, Any]) -> None:
    stored = KubeStore().put(app)
    assert stored["spec"] == app["spec"] and stored["status"] == app["status"]
    status = stored["status"]
    if "sources" in app["spec"]:
        assert (
            status["sourceTypes"] == ["Helm", "Kustomize"] and len(status["sync"]["revisions"]) == 2
        )
    else:
        assert status["sourceType"] == app["metadata"]["name"].capitalize()
    assert status["sync"]["status"] == "Synced"


def test_other_builders_pass_the_schemas() -> None:
    store = KubeStore()
    store.put(objects.image_updater("iu"))
    pull = store.put(objects.dockerconfig_secret("pull", "argocd", "ghcr.io", "me", "pw"))
    assert pull["type"] == "kubernetes.io/dockerconfigjson"
    assert store.put(objects.secret("s", data={"a": "b"}))["data"] == {"a": "Yg=="}
    assert store.put(objects.config_map("cm", data={"registries.conf": "registries: []"}))["data"]


async def test_malformed_applications_are_rejected(co: client.CustomObjectsApi) -> None:
    app = objects.application("app")
    del app["spec"]["destination"]
    app["spec"]["source"]["kustomize"] = {"replicas": [{"name": "web", "count": "3"}]}
    status = await fails(co.create_namespaced_custom_object(*APP, app), 422)
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.destination"]
    app = objects.application("Bad_Name")
    status = await fails(co.create_namespaced_custom_object(*APP, app), 422)
    assert status["details"]["causes"][0]["field"] == "metadata.name"


# --- core resources -----------------------------------------------------------------------------


async def test_secrets_and_config_maps(api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    meta = client.V1ObjectMeta(name="creds", labels={"kind": "pull"})
    created = await core.create_namespaced_secret(
        NS, client.V1Secret(metadata=meta, string_data={"token": "abc"})
    )
    assert (
        created.data == {"token": "YWJj"}
        and created.type == "Opaque"
        and created.string_data is None
    )
    listed = await core.list_namespaced_secret(NS, label_selector="kind=pull")
    assert [s.metadata.name for s in listed.items] == ["creds"]
    bad = client.V1Secret(metadata=client.V1ObjectMeta(name="bad"), data={"token": "not base64!"})
    status = await fails(core.create_namespaced_secret(NS, bad), 400)
    assert "illegal base64" in status["message"]
    docker = client.V1Secret(
        metadata=client.V1ObjectMeta(name="d"), type="kubernetes.io/dockerconfigjson", data={}
    )
    status = await fails(core.create_namespaced_secret(NS, docker), 422)
    assert status["details"]["causes"][0]["field"] == "data[.dockerconfigjson]"
    deleted = await core.delete_namespaced_secret("creds", NS)
    assert deleted.status == "Success"
    await core.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"), data={"k": "v"})
    )
    assert (await core.read_namespaced_config_map("cm", NS)).data == {"k": "v"}


async def test_events_core_and_events_api(api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    involved = client.V1ObjectReference(
        kind="Application", name="app", namespace=NS, api_version="argoproj.io/v1alpha1"
    )
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name="app."),
        involved_object=involved,
        reason="ImagesUpdated",
        message="updated",
        type="Normal",
        count=1,
    )
    await core.create_namespaced_event(NS, event)
    found = await core.list_namespaced_event(
        NS, field_selector="involvedObject.name=app,reason=ImagesUpdated"
    )
    assert len(found.items) == 1 and found.items[0].message == "updated"
    events_v1 = client.EventsV1Api(api)
    incomplete = {"metadata": {"name": "e1"}, "reason": "ImagesUpdated"}  # the model refuses it
    status = await fails(events_v1.create_namespaced_event(NS, incomplete), 422)
    assert {"eventTime", "reportingController", "action"} <= {
        c["field"] for c in status["details"]["causes"]
    }
    complete = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="e2"),
        event_time=dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC),
        reporting_controller="argocd-image-updater",
        reporting_instance="pod-1",
        action="Update",
        reason="ImagesUpdated",
        regarding=involved,
        type="Normal",
    )
    await events_v1.create_namespaced_event(NS, complete)


async def test_deleting_a_namespace_deletes_its_objects(
    api: ApiClient, kube: KubeApiServer
) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="gone")))
    kube.store.put(objects.application("app", "gone"))
    await core.delete_namespace("gone")
    assert kube.store.list("applications", "gone") == []
    with pytest.raises(KubeError) as info:
        kube.store.get("namespaces", None, "gone")
    assert info.value.code == 404


async def test_leases_conflict_on_stale_updates(api: ApiClient) -> None:
    leases = client.CoordinationV1Api(api)
    now = dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)
    spec = client.V1LeaseSpec(
        holder_identity="a", lease_duration_seconds=15, acquire_time=now, renew_time=now
    )
    await leases.create_namespaced_lease(
        NS, client.V1Lease(metadata=client.V1ObjectMeta(name="leader"), spec=spec)
    )
    mine = await leases.read_namespaced_lease("leader", NS)
    theirs = await leases.read_namespaced_lease("leader", NS)
    assert mine.spec.renew_time == now
    mine.spec.renew_time = now + dt.timedelta(seconds=5, microseconds=1)
    await leases.replace_namespaced_lease("leader", NS, mine)
    theirs.spec.holder_identity = "b"
    status = await fails(leases.replace_namespaced_lease("leader", NS, theirs), 409)
    assert status["message"].startswith(
        'Operation cannot be fulfilled on leases.coordination.k8s.io "leader"'
    )
    # MicroTime needs exactly six fractional digits, as in Go's RFC3339Micro layout
    mine = await leases.read_namespaced_lease("leader", NS)
    mine.spec.renew_time = dt.datetime(2024, 1, 2, 3, 4, 6, tzinfo=dt.UTC)
    status = await fails(leases.replace_namespaced_lease("leader", NS, mine), 400)
    assert "parsing time" in status["message"]


# --- test hooks ---------------------------------------------------------------------------------


async def test_fault_injection_latency_and_counters(
    co: client.CustomObjectsApi, kube: KubeApiServer
) -> None:
    kube.store.put(objects.application("app"))
    kube.fail_next(2, verb="get", resource="applications", status=503)
    for _ in range(2):
        status = await fails(co.get_namespaced_custom_object(*APP, "app"), 503)
        assert status["reason"] == "ServiceUnavailable"
    await co.get_namespaced_custom_object(*APP, "app")
    await co.list_namespaced_custom_object(*APP)
    assert kube.request_count("get", "applications") == 3
    assert kube.request_count(resource="applications") == 4
    kube.set_latency(0.3, verb="list")
    started = time.monotonic()
    await co.list_namespaced_custom_object(*APP)
    assert time.monotonic() - started >= 0.3
    kube.set_latency(0, verb="list")


def test_store_mutations_from_test_code() -> None:
    store = KubeStore(namespaces=["argocd"])
    put = store.put(objects.application("app"))
    patched = store.patch("app", NS, "app", {"spec": {"project": "x"}})
    assert int(patched["metadata"]["resourceVersion"]) > int(put["metadata"]["resourceVersion"])
    assert store.get("Application", NS, "app")["spec"]["project"] == "x"
    with pytest.raises(KubeError) as info:
        store.put(objects.image_updater("iu", spec={}))
    assert info.value.code == 422 and "spec.applicationRefs" in info.value.message
    with pytest.raises(ValueError, match="unknown resource 'pods'"):
        store.get("pods", NS, "x")
