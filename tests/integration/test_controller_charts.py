"""Helm chart and OCI artifact versions end to end with the ``argocd`` method: charts pushed to
the real registry as ``helm push`` does, a non-chart OCI artifact, and a Helm repository over
HTTP; the Applications live in the Kubernetes API fake."""

from __future__ import annotations

import copy
import ssl
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.controller.runner import Controller
from argocd_image_updater.plan.model import ImageReason
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.helm_repo import HelmRepoServer
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 3, 1, tzinfo=UTC)
PATCH = ("patch", "applications")


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.fixture
def helm_repo() -> Iterator[HelmRepoServer]:
    with HelmRepoServer() as server:
        yield server


async def make_controller(
    kube: KubeApiServer, tmp_path: Path, conf: Path, **flags: Any
) -> tuple[Controller, list[Any]]:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    settings = resolve(
        "run",
        {"kubeconfig": str(kubeconfig), "registries_conf_path": str(conf), "once": True, **flags},
        env={},
    )
    return await build_controller(settings)


async def close_all(closers: list[Any]) -> None:
    for closer in reversed(closers):
        await (closer.aclose() if hasattr(closer, "aclose") else closer.close())


async def run_cycles(kube: KubeApiServer, tmp_path: Path, conf: Path, count: int) -> list[Any]:
    controller, closers = await make_controller(kube, tmp_path, conf)
    try:
        return [await controller.cycle() for _ in range(count)]
    finally:
        await close_all(closers)


def app_obj(kube: KubeApiServer, name: str) -> dict[str, Any]:
    return kube.store.get("applications", NS, name)


def without_revisions(obj: dict[str, Any]) -> dict[str, Any]:
    """The Application with its targetRevisions and server-managed metadata blanked."""
    out = copy.deepcopy(obj)
    for key in ("resourceVersion", "generation", "managedFields"):
        out["metadata"].pop(key, None)
    spec = out["spec"]
    for source in [spec.get("source"), *(spec.get("sources") or ())]:
        if source:
            source.pop("targetRevision", None)
    return out


def chart_app(name: str, sources: list[dict[str, Any]]) -> dict[str, Any]:
    if len(sources) == 1:
        app = objects.application(name, NS, source_type="Helm")
        app["spec"]["source"] = sources[0]
        return app
    return objects.application(name, NS, sources=sources, source_types=["Helm"] * len(sources))


def updater(name: str, pattern: str, charts: list[dict[str, Any]]) -> dict[str, Any]:
    return objects.image_updater(
        name, NS, {"applicationRefs": [{"namePattern": pattern, "charts": charts}]}
    )


async def test_oci_charts_and_artifacts_move_their_target_revisions_with_one_patch_per_app(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    charts_path, chart = f"{repo}/charts", "web"
    bundle = f"{repo}/bundle"
    async with ImagePusher(registry.url) as pusher:
        for i, version in enumerate(["1.0.0", "1.2.0", "1.10.1", "2.0.0"]):
            await pusher.push_chart(f"{charts_path}/{chart}", version, created=START + timedelta(i))
        for version in ["0.1.0", "0.3.0"]:
            await pusher.push_artifact(
                bundle,
                version,
                config_media_type="application/vnd.example.bundle.config.v1+json",
                config=b"{}",
                layer_media_type="application/vnd.example.bundle.layer.v1.tar",
                layer=f"bundle {version}".encode(),
            )
    host = registry.host
    # A classic Helm OCI source, and a multi-source app: the same chart as an Argo CD native
    # OCI source next to a non-chart OCI artifact; both of its sources change.
    kube.store.put(
        chart_app(
            "shop-single",
            [{"repoURL": f"{host}/{charts_path}", "chart": chart, "targetRevision": "1.0.0"}],
        )
    )
    kube.store.put(
        chart_app(
            "shop-multi",
            [
                {"repoURL": f"oci://{host}/{charts_path}/{chart}", "targetRevision": "1.0.0"},
                {"repoURL": f"oci://{host}/{bundle}", "path": ".", "targetRevision": "0.1.0"},
            ],
        )
    )
    kube.store.put(
        updater(
            "shop",
            "shop-*",
            [
                {"alias": "web", "chart": f"oci://{host}/{charts_path}/{chart}:^1"},
                {"alias": "bundle", "chart": f"oci://{host}/{bundle}"},
            ],
        )
    )
    before = {name: app_obj(kube, name) for name in ("shop-single", "shop-multi")}
    conf = registries_conf(tmp_path, registry)

    first, second = await run_cycles(kube, tmp_path, conf, 2)

    assert first.errors == 0 and first.images_updated == 3
    single, multi = app_obj(kube, "shop-single"), app_obj(kube, "shop-multi")
    assert single["spec"]["source"]["targetRevision"] == "1.10.1"
    assert [s["targetRevision"] for s in multi["spec"]["sources"]] == ["1.10.1", "0.3.0"]
    for name, obj in (("shop-single", single), ("shop-multi", multi)):
        assert without_revisions(obj) == without_revisions(before[name])
    # The status counts charts like images and lists their updates.
    status = kube.store.get("imageupdaters", NS, "shop")["status"]
    assert status["applicationsMatched"] == 2 and status["imagesManaged"] == 3
    updates = {
        (u["alias"], u["image"], u["newVersion"], u["applicationsUpdated"])
        for u in status["recentUpdates"]
    }
    assert updates == {
        ("web", f"{host}/{charts_path}/{chart}", "1.10.1", 2),
        ("bundle", f"{host}/{bundle}", "0.3.0", 1),
    }
    # One scan per repository (the chart's is shared by both apps), one patch per app.
    assert first.scans == 2
    assert kube.requests[PATCH] == 2
    # The second cycle finds everything up to date and writes nothing.
    assert second.images_updated == 0 and second.errors == 0
    assert kube.requests[PATCH] == 2
    reasons = {
        (o.app, r.alias): r.reason for o in second.apps for r in (o.plan.results if o.plan else ())
    }
    assert reasons == {
        (f"{NS}/shop-single", "web"): ImageReason.UP_TO_DATE,
        (f"{NS}/shop-single", "bundle"): ImageReason.NOT_LIVE,
        (f"{NS}/shop-multi", "web"): ImageReason.UP_TO_DATE,
        (f"{NS}/shop-multi", "bundle"): ImageReason.UP_TO_DATE,
    }


async def test_newest_build_of_an_oci_chart_uses_its_created_annotation(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    async with ImagePusher(registry.url) as pusher:
        # 2.0.0 was pushed first: by build date 1.5.0 is the newest.
        for version, day in (("2.0.0", 0), ("1.0.0", 1), ("1.5.0", 2)):
            await pusher.push_chart(f"{repo}/api", version, created=START + timedelta(days=day))
    host = registry.host
    kube.store.put(
        chart_app("api", [{"repoURL": f"{host}/{repo}", "chart": "api", "targetRevision": "1.0.0"}])
    )
    kube.store.put(
        objects.image_updater(
            "api",
            NS,
            {
                "applicationRefs": [
                    {
                        "namePattern": "api",
                        "commonUpdateSettings": {
                            "updateStrategy": "newest-build",
                            "allowDowngrade": True,
                        },
                        "charts": [{"alias": "api", "chart": f"oci://{host}/{repo}/api"}],
                    }
                ]
            },
        )
    )
    (result,) = await run_cycles(kube, tmp_path, registries_conf(tmp_path, registry), 1)
    assert result.errors == 0 and result.images_updated == 1
    assert app_obj(kube, "api")["spec"]["source"]["targetRevision"] == "1.5.0"


async def test_never_downgrade_applies_to_charts(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for version in ("1.0.0", "1.1.0"):
            await pusher.push_chart(f"{repo}/db", version)
    host = registry.host
    kube.store.put(
        chart_app("db", [{"repoURL": f"{host}/{repo}", "chart": "db", "targetRevision": "3.0.0"}])
    )
    kube.store.put(updater("db", "db", [{"alias": "db", "chart": f"oci://{host}/{repo}/db"}]))
    (result,) = await run_cycles(kube, tmp_path, registries_conf(tmp_path, registry), 1)
    (outcome,) = result.apps
    assert outcome.plan is not None
    (chart_result,) = outcome.plan.results
    assert chart_result.reason == ImageReason.WOULD_DOWNGRADE
    assert app_obj(kube, "db")["spec"]["source"]["targetRevision"] == "3.0.0"
    assert kube.requests[PATCH] == 0


async def test_helm_repository_index_is_downloaded_once_then_revalidated(
    kube: KubeApiServer, helm_repo: HelmRepoServer, tmp_path: Path, registry: RegistryServer
) -> None:
    helm_repo.set_chart(
        "api", {"0.1.0": START, "0.2.0": START + timedelta(1), "1.0.0": START + timedelta(2)}
    )
    helm_repo.set_chart("other", {"9.9.9": START})
    for i in range(3):
        kube.store.put(
            chart_app(
                f"api-{i}",
                [{"repoURL": helm_repo.url, "chart": "api", "targetRevision": "0.1.0"}],
            )
        )
    kube.store.put(updater("api", "api-*", [{"alias": "api", "chart": f"{helm_repo.url}/api:<1"}]))
    conf = registries_conf(tmp_path, registry)

    first, second = await run_cycles(kube, tmp_path, conf, 2)

    assert first.errors == 0 and first.images_updated == 3
    for i in range(3):
        assert app_obj(kube, f"api-{i}")["spec"]["source"]["targetRevision"] == "0.2.0"
    assert kube.requests[PATCH] == 3
    # One download for three apps; the next cycle's conditional request costs no body.
    assert helm_repo.count(200) == 1
    assert helm_repo.count(304) == 1
    assert second.images_updated == 0 and second.errors == 0
    assert kube.requests[PATCH] == 3

    helm_repo.set_chart("api", {"0.1.0": START, "0.2.0": START, "0.3.0": START})
    (third,) = await run_cycles(kube, tmp_path, conf, 1)
    assert third.images_updated == 3
    assert helm_repo.count(200) == 2


async def test_unknown_chart_in_a_helm_repository_is_that_chart_error(
    kube: KubeApiServer, helm_repo: HelmRepoServer, tmp_path: Path, registry: RegistryServer
) -> None:
    helm_repo.set_chart("api", {"0.1.0": START})
    kube.store.put(
        chart_app("typo", [{"repoURL": helm_repo.url, "chart": "apx", "targetRevision": "0.1.0"}])
    )
    kube.store.put(updater("typo", "typo", [{"alias": "apx", "chart": f"{helm_repo.url}/apx"}]))
    (result,) = await run_cycles(kube, tmp_path, registries_conf(tmp_path, registry), 1)
    (outcome,) = result.apps
    assert outcome.plan is not None
    (chart_result,) = outcome.plan.results
    assert chart_result.reason == ImageReason.REGISTRY_ERROR
    assert "chart 'apx' is not listed in" in chart_result.message


async def test_helm_repository_credentials_come_from_argo_cd_repository_secrets(
    kube: KubeApiServer, tmp_path: Path, registry: RegistryServer
) -> None:
    password = "helm-repo-Pa55-9f2c"
    with HelmRepoServer(users={"reader": password}) as repo:
        repo.set_chart("api", {"0.1.0": START, "0.2.0": START})
        kube.store.put(
            chart_app("api", [{"repoURL": repo.url, "chart": "api", "targetRevision": "0.1.0"}])
        )
        kube.store.put(updater("api", "api", [{"alias": "api", "chart": f"{repo.url}/api"}]))
        conf = registries_conf(tmp_path, registry)

        # No Secret: the repository refuses, the chart reports it.
        (refused,) = await run_cycles(kube, tmp_path, conf, 1)
        (result,) = refused.apps[0].plan.results  # type: ignore[union-attr]
        assert result.reason == ImageReason.REGISTRY_ERROR
        assert "HTTP 401" in result.message and "type helm" in result.message

        # Plain http:// needs insecure: "true" before a password is sent.
        labels = {"argocd.argoproj.io/secret-type": "repository"}
        data = {"type": "helm", "url": repo.url, "username": "reader", "password": password}
        kube.store.put(objects.secret("repo-api", NS, data, labels=labels))
        (guarded,) = await run_cycles(kube, tmp_path, conf, 1)
        (result,) = guarded.apps[0].plan.results  # type: ignore[union-attr]
        assert "refusing to send the credentials" in result.message
        assert password not in result.message

        kube.store.put(objects.secret("repo-api", NS, {**data, "insecure": "true"}, labels=labels))
        (done,) = await run_cycles(kube, tmp_path, conf, 1)
        assert done.errors == 0 and done.images_updated == 1
        assert app_obj(kube, "api")["spec"]["source"]["targetRevision"] == "0.2.0"


async def test_legacy_chart_list_annotation_without_an_image_updater(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for version in ("1.0.0", "1.1.0", "2.0.0"):
            await pusher.push_chart(f"{repo}/web", version)
    host = registry.host
    app = chart_app(
        "legacy", [{"repoURL": f"{host}/{repo}", "chart": "web", "targetRevision": "1.0.0"}]
    )
    app["metadata"]["annotations"] = {
        "argocd-image-updater.argoproj.io/chart-list": f"web=oci://{host}/{repo}/web",
        "argocd-image-updater.argoproj.io/web.allow-tags": "regexp:^1\\.",
    }
    kube.store.put(app)
    (result,) = await run_cycles(kube, tmp_path, registries_conf(tmp_path, registry), 1)
    assert result.errors == 0 and result.images_updated == 1
    assert app_obj(kube, "legacy")["spec"]["source"]["targetRevision"] == "1.1.0"


async def test_helm_repository_custom_ca_comes_from_argocd_tls_certs_cm(
    kube: KubeApiServer, tmp_path: Path, registry: RegistryServer
) -> None:
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    with HelmRepoServer(tls=server) as repo:
        repo.set_chart("api", {"0.1.0": START, "0.2.0": START})
        kube.store.put(
            chart_app("api", [{"repoURL": repo.url, "chart": "api", "targetRevision": "0.1.0"}])
        )
        kube.store.put(updater("api", "api", [{"alias": "api", "chart": f"{repo.url}/api"}]))
        conf = registries_conf(tmp_path, registry)
        (untrusted,) = await run_cycles(kube, tmp_path, conf, 1)
        (result,) = untrusted.apps[0].plan.results  # type: ignore[union-attr]
        assert result.reason == ImageReason.REGISTRY_ERROR
        assert "CERTIFICATE_VERIFY_FAILED" in result.message or "certificate" in result.message

        pem = ca.cert_pem.bytes().decode()
        kube.store.put(objects.config_map("argocd-tls-certs-cm", NS, {"127.0.0.1": pem}))
        (trusted,) = await run_cycles(kube, tmp_path, conf, 1)
        assert trusted.errors == 0 and trusted.images_updated == 1
        assert app_obj(kube, "api")["spec"]["source"]["targetRevision"] == "0.2.0"
