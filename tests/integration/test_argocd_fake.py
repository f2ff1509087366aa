"""The Argo CD API fake, over HTTP(S) with httpx."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.argocd import ArgoCDApiServer, check_body
from argocd_image_updater_testing.kube import KubeApiServer, KubeStore

ADMIN = "admin-token"
TEAM = "team-token"
APPS = "/api/v1/applications"


def seeded_store() -> KubeStore:
    store = KubeStore(namespaces=["argocd", "apps", "elsewhere"])
    store.put(
        objects.application("a1", labels={"team": "a"}, project="team-a", images=["nginx:1.25"])
    )
    store.put(objects.application("b1", labels={"team": "b"}, source_type="Helm", chart="web"))
    store.put(objects.application("a2", "apps", labels={"team": "a"}, project="team-a"))
    store.put(objects.application("hidden", "elsewhere"))
    return store


@pytest.fixture
async def argocd() -> AsyncIterator[ArgoCDApiServer]:
    tokens = {ADMIN: None, TEAM: ["team-*"]}
    async with ArgoCDApiServer(seeded_store(), tokens=tokens, app_namespaces=["apps"]) as server:
        yield server


@pytest.fixture
async def admin(argocd: ArgoCDApiServer) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    async with httpx.AsyncClient(base_url=argocd.url, headers=headers) as http:
        yield http


def names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [i["metadata"]["name"] for i in response.json()["items"]]


def grpc_error(response: httpx.Response, status: int, code: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and body["error"] == body["message"]
    return str(body["message"])


async def test_list_and_its_filters(admin: httpx.AsyncClient, argocd: ArgoCDApiServer) -> None:
    listed = await admin.get(APPS)
    assert names(listed) == ["a1", "a2", "b1"]  # sorted by name; "elsewhere" is not enabled
    body = listed.json()
    assert body["metadata"]["resourceVersion"] == argocd.store.resource_version
    first = body["items"][0]
    assert "kind" not in first and first["status"]["summary"]["images"] == ["nginx:1.25"]
    assert names(await admin.get(APPS, params={"selector": "team=a"})) == ["a1", "a2"]
    assert names(await admin.get(APPS, params={"selector": "team notin (a)"})) == ["b1"]
    assert names(await admin.get(APPS, params={"projects": ["team-a", "x"]})) == ["a1", "a2"]
    assert names(await admin.get(APPS, params={"appNamespace": "apps"})) == ["a2"]
    assert names(await admin.get(APPS, params={"name": "b1"})) == ["b1"]
    repo = objects.DEFAULT_REPO.removesuffix(".git")
    assert names(await admin.get(APPS, params={"repo": repo})) == ["a1", "a2", "b1"]
    missing = await admin.get(APPS, params={"name": "nope"})
    assert grpc_error(missing, 404, 5) == "application 'nope' not found"
    bad = await admin.get(APPS, params={"selector": "team in (a"})
    assert "selector" in grpc_error(bad, 400, 3)


async def test_get(admin: httpx.AsyncClient) -> None:
    app = (await admin.get(f"{APPS}/a1")).json()
    assert app["metadata"]["namespace"] == "argocd" and app["spec"]["project"] == "team-a"
    other = await admin.get(f"{APPS}/a2", params={"appNamespace": "apps"})
    assert other.json()["metadata"]["namespace"] == "apps"
    missing = await admin.get(f"{APPS}/nope")
    assert grpc_error(missing, 404, 5) == 'applications.argoproj.io "nope" not found'
    wrong_project = await admin.get(f"{APPS}/a1", params={"project": "default"})
    grpc_error(wrong_project, 403, 7)
    not_enabled = await admin.get(f"{APPS}/hidden", params={"appNamespace": "elsewhere"})
    grpc_error(not_enabled, 403, 7)


async def test_authentication(argocd: ArgoCDApiServer) -> None:
    async with httpx.AsyncClient(base_url=argocd.url) as http:
        anonymous = await http.get(APPS)
        wrong = await http.get(APPS, headers={"Authorization": "Bearer nope"})
    async with httpx.AsyncClient(base_url=argocd.url, cookies={"argocd.token": ADMIN}) as http:
        cookie = await http.get(APPS)
    assert grpc_error(anonymous, 401, 16) == "no session information"
    grpc_error(wrong, 401, 16)
    assert names(cookie) == ["a1", "a2", "b1"]


async def test_a_token_sees_only_its_projects(argocd: ArgoCDApiServer) -> None:
    headers = {"Authorization": f"Bearer {TEAM}"}
    async with httpx.AsyncClient(base_url=argocd.url, headers=headers) as http:
        assert names(await http.get(APPS)) == ["a1", "a2"]
        forbidden = await http.get(f"{APPS}/b1")
        unknown = await http.get(f"{APPS}/nope")  # not told apart from a forbidden one
        app = (await http.get(f"{APPS}/a1")).json()
        app["spec"]["project"] = "default"
        moved = await http.put(f"{APPS}/a1/spec", json=app["spec"])
    assert "permission denied" in grpc_error(forbidden, 403, 7)
    grpc_error(unknown, 403, 7)
    grpc_error(moved, 403, 7)


async def test_update_spec(admin: httpx.AsyncClient, argocd: ArgoCDApiServer) -> None:
    before = argocd.store.get("applications", "argocd", "b1")
    spec = before["spec"]
    spec["source"]["helm"] = {
        "parameters": [{"name": "image.tag", "value": "1.2", "forceString": True}]
    }
    response = await admin.put(f"{APPS}/b1/spec", json=spec, params={"appNamespace": "argocd"})
    assert response.status_code == 200, response.text
    assert response.json() == spec
    after = argocd.store.get("applications", "argocd", "b1")
    assert after["spec"] == spec and after["status"] == before["status"]
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert argocd.request_count("update", "applications/spec") == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s["source"].update(kustomize={"imagez": ["a"]}), "spec.source.kustomize.imagez"),
        (lambda s: s.update(sourcez=[]), "spec.sourcez"),
        (
            lambda s: s["source"].update(
                helm={"parameters": [{"name": "a", "forceString": "yes"}]}
            ),
            "spec.source.helm.parameters[0].forceString",
        ),
        (lambda s: s.update(revisionHistoryLimit="10"), "spec.revisionHistoryLimit"),
    ],
)
async def test_update_spec_rejects_malformed_bodies(
    admin: httpx.AsyncClient, change: Any, field: str
) -> None:
    spec = (await admin.get(f"{APPS}/a1")).json()["spec"]
    change(spec)
    response = await admin.put(f"{APPS}/a1/spec", json=spec)
    message = grpc_error(response, 400, 3)
    assert f'"{field}"' in message


async def test_update_spec_validates_the_destination(admin: httpx.AsyncClient) -> None:
    spec = (await admin.get(f"{APPS}/a1")).json()["spec"]
    spec["destination"] = {"namespace": "x"}
    response = await admin.put(f"{APPS}/a1/spec", json=spec)
    assert "Destination server missing" in grpc_error(response, 400, 3)


async def test_patch(admin: httpx.AsyncClient, argocd: ArgoCDApiServer) -> None:
    merge = {
        "spec": {"source": {"kustomize": {"images": ["nginx:1.26"]}}},
        "metadata": {"labels": {"x": "y"}},
    }
    body = {"name": "a1", "patch": json.dumps(merge), "patchType": "merge"}
    response = await admin.patch(f"{APPS}/a1", json=body)
    assert response.status_code == 200, response.text
    patched = response.json()
    assert patched["spec"]["source"]["kustomize"]["images"] == ["nginx:1.26"]
    assert patched["metadata"]["labels"] == {"team": "a", "x": "y"}
    ops = [
        {"op": "test", "path": "/spec/source/kustomize/images/0", "value": "nginx:1.26"},
        {"op": "replace", "path": "/spec/source/kustomize/images/0", "value": "nginx:1.27"},
    ]
    response = await admin.patch(f"{APPS}/a1", json={"patch": json.dumps(ops), "patchType": "json"})
    assert response.json()["spec"]["source"]["kustomize"]["images"] == ["nginx:1.27"]
    stored = argocd.store.get("applications", "argocd", "a1")
    assert stored["spec"]["source"]["kustomize"]["images"] == ["nginx:1.27"]
    failed = await admin.patch(f"{APPS}/a1", json={"patch": json.dumps(ops), "patchType": "json"})
    grpc_error(failed, 400, 3)
    strategic = await admin.patch(f"{APPS}/a1", json={"patch": "{}", "patchType": "strategic"})
    assert grpc_error(strategic, 400, 3) == "Patch type 'strategic' is not supported"
    typo = {"patch": json.dumps({"spec": {"sorce": {}}}), "patchType": "merge"}
    assert '"spec.sorce"' in grpc_error(await admin.patch(f"{APPS}/a1", json=typo), 400, 3)
    unknown = await admin.patch(f"{APPS}/a1", json={"patch": "{}", "patchKind": "merge"})
    assert '"patchKind"' in grpc_error(unknown, 400, 3)


async def test_shares_the_store_of_a_kube_api_server() -> None:
    async with KubeApiServer() as kube, ArgoCDApiServer(kube.store) as argocd:
        kube.store.put(objects.application("app", images=["nginx:1.25"]))
        headers = {"Authorization": "Bearer argocd-token"}
        async with httpx.AsyncClient(headers=headers) as http:
            spec = (await http.get(f"{argocd.url}{APPS}/app")).json()["spec"]
            spec["source"]["kustomize"] = {"images": ["nginx:1.26"]}
            assert (await http.put(f"{argocd.url}{APPS}/app/spec", json=spec)).status_code == 200
            path = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/app"
            seen = (await http.get(kube.url + path)).json()
    assert seen["spec"]["source"]["kustomize"]["images"] == ["nginx:1.26"]


async def test_https(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file = tmp_path / "server.pem", tmp_path / "server.key"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    async with ArgoCDApiServer(seeded_store(), certfile=cert_file, keyfile=key_file) as argocd:
        assert argocd.url.startswith("https://")
        context = ssl.create_default_context(cafile=str(ca_file))
        async with httpx.AsyncClient(
            verify=context, headers={"Authorization": "Bearer argocd-token"}
        ) as http:
            assert names(await http.get(argocd.url + APPS)) == ["a1", "b1"]


async def test_fault_injection(admin: httpx.AsyncClient, argocd: ArgoCDApiServer) -> None:
    argocd.fail_next(verb="get", resource="applications", status=503)
    grpc_error(await admin.get(f"{APPS}/a1"), 503, 14)
    assert (await admin.get(f"{APPS}/a1")).status_code == 200
    assert argocd.request_count("get", "applications") == 2


def test_check_body_names_fields_and_knows_the_json_forms() -> None:
    spec = {
        "project": "default",
        "destination": {"server": "https://kubernetes.default.svc"},
        "source": {
            "repoURL": "https://example.com/repo.git",
            "helm": {
                "valuesObject": {"any": ["json", 1]},
                "parameters": [{"name": "a", "value": "b"}],
            },
            "kustomize": {"replicas": [{"name": "web", "count": 3}, {"name": "api", "count": "2"}]},
        },
    }
    assert check_body("v1alpha1ApplicationSpec", spec, "spec") == []
    spec["source"]["kustomize"]["replicas"][0]["count"] = 1.5  # type: ignore[index]
    spec["destination"]["port"] = 1  # type: ignore[index]
    assert check_body("v1alpha1ApplicationSpec", spec, "spec") == [
        'unknown field "spec.destination.port"',
        'field "spec.source.kustomize.replicas[0].count": expected integer or string, got number',
    ]
