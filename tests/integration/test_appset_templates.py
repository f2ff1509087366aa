"""One templated ImageUpdater for a whole generated fleet: 50 Applications, each updated to the
newest tag of its own component's repository, and Applications each following their own OCI
chart, against the real registry (behind a counting proxy) and the Kubernetes API fake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from argocd_image_updater.cli.run_cmd import build_controller
from argocd_image_updater.config.settings import resolve
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 3, 1, tzinfo=UTC)
APPS = 50
TAGS = {
    "cart": ["1.0.0", "1.2.0", "1.3.1", "2.0.0"],
    "search": ["1.0.0", "1.1.0"],
    "checkout": ["1.0.0", "1.0.4"],
    "catalog": ["1.0.0", "1.5.0", "1.4.9"],
    "users": ["1.0.0", "1.9.0", "3.0.0"],
}
NEWEST = {"cart": "1.3.1", "search": "1.1.0", "checkout": "1.0.4", "catalog": "1.5.0"}
NEWEST["users"] = "1.9.0"
COMPONENTS = sorted(TAGS)


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


def images_of(kube: KubeApiServer, name: str) -> list[str]:
    app: dict[str, Any] = kube.store.get("applications", NS, name)
    return list(app["spec"]["source"]["kustomize"]["images"])


async def test_one_templated_cr_updates_fifty_apps_with_one_tag_list_per_repository(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for component, tags in TAGS.items():
            for i, tag in enumerate(tags):
                await pusher.push_image(
                    f"{repo}/{component}", tag, created=START + timedelta(days=i)
                )
    proxy = await FaultyProxy(registry.url).start()
    try:
        host = proxy.url.split("://", 1)[1]
        base = f"{host}/{repo}"
        for i in range(APPS):
            component = COMPONENTS[i % len(COMPONENTS)]
            running = f"{base}/{component}:1.0.0"
            kube.store.put(
                objects.application(
                    f"shop-{i:02d}",
                    NS,
                    images=[running],
                    kustomize_images=[running],
                    labels={"component": component, "app.kubernetes.io/part-of": "shop"},
                )
            )
        unlabelled = f"{base}/cart:1.0.0"
        kube.store.put(
            objects.application(
                "shop-unlabelled", NS, images=[unlabelled], kustomize_images=[unlabelled]
            )
        )
        kube.store.put(
            objects.image_updater(
                "shop",
                NS,
                {
                    "applicationRefs": [
                        {
                            "namePattern": "shop-*",
                            "images": [
                                {
                                    "alias": '{{index .AppLabels "component"}}',
                                    "imageName": base + '/{{index .AppLabels "component"}}:~1',
                                }
                            ],
                        }
                    ]
                },
            )
        )
        conf = tmp_path / "registries.conf"
        conf.write_text(f"registries:\n- name: t\n  prefix: {host}\n  api_url: {proxy.url}\n")
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
        settings = resolve(
            "run",
            {"kubeconfig": str(kubeconfig), "registries_conf_path": str(conf), "once": True},
            env={},
        )
        controller, closers = await build_controller(settings)
        try:
            first = await controller.cycle()
            tag_lists = proxy.counts["tags"]
            second = await controller.cycle()
        finally:
            for closer in reversed(closers):
                await (closer.aclose() if hasattr(closer, "aclose") else closer.close())
    finally:
        await proxy.stop()

    assert (first.images_updated, first.errors) == (APPS, 0)
    for i in range(APPS):
        component = COMPONENTS[i % len(COMPONENTS)]
        wanted = [f"{base}/{component}:{NEWEST[component]}"]
        assert images_of(kube, f"shop-{i:02d}") == wanted, i
    # Five distinct repositories: five scans, one tag list each, shared by ten apps each.
    assert first.scans == len(COMPONENTS)
    assert tag_lists == len(COMPONENTS)
    # The unlabelled Application is skipped, with the reason in the status, never written.
    assert images_of(kube, "shop-unlabelled") == [unlabelled]
    status = kube.store.get("imageupdaters", NS, "shop")["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    line = (
        f'{NS}/shop-unlabelled {{{{index .AppLabels "component"}}}}: template-missing-key: '
        "template: missing label component (ImageUpdater argocd/shop field "
        "spec.applicationRefs[0].images[0].imageName)"
    )
    assert line in conditions["ImagesUpToDate"]["message"].splitlines()
    assert status["applicationsMatched"] == APPS + 1
    # The next cycle writes nothing new and again lists each repository's tags once.
    assert (second.images_updated, second.errors) == (0, 0)
    assert proxy.counts["tags"] == 2 * len(COMPONENTS)


async def test_templated_chart_references_follow_each_apps_own_chart(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    versions = {"web": ["1.0.0", "1.4.0", "2.0.0"], "api": ["1.0.0", "1.1.3"]}
    async with ImagePusher(registry.url) as pusher:
        for chart, tags in versions.items():
            for i, version in enumerate(tags):
                await pusher.push_chart(
                    f"{repo}/charts/{chart}", version, created=START + timedelta(days=i)
                )
    proxy = await FaultyProxy(registry.url).start()
    try:
        host = proxy.url.split("://", 1)[1]
        for i in range(6):
            chart = "web" if i % 2 else "api"
            app = objects.application(f"svc-{i}", NS, source_type="Helm", labels={"chart": chart})
            source = {"repoURL": f"{host}/{repo}/charts", "chart": chart, "targetRevision": "1.0.0"}
            app["spec"]["source"] = source
            kube.store.put(app)
        unlabelled = objects.application("svc-unlabelled", NS, source_type="Helm")
        unlabelled["spec"]["source"] = {
            "repoURL": f"{host}/{repo}/charts",
            "chart": "web",
            "targetRevision": "1.0.0",
        }
        kube.store.put(unlabelled)
        label = '{{index .AppLabels "chart"}}'
        kube.store.put(
            objects.image_updater(
                "svc",
                NS,
                {
                    "applicationRefs": [
                        {
                            "namePattern": "svc-*",
                            "charts": [
                                {
                                    "alias": "chart",
                                    "chart": f"oci://{host}/{repo}/charts/{label}:^1",
                                }
                            ],
                        }
                    ]
                },
            )
        )
        conf = tmp_path / "registries.conf"
        conf.write_text(f"registries:\n- name: t\n  prefix: {host}\n  api_url: {proxy.url}\n")
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
        settings = resolve(
            "run",
            {"kubeconfig": str(kubeconfig), "registries_conf_path": str(conf), "once": True},
            env={},
        )
        controller, closers = await build_controller(settings)
        try:
            result = await controller.cycle()
        finally:
            for closer in reversed(closers):
                await (closer.aclose() if hasattr(closer, "aclose") else closer.close())
    finally:
        await proxy.stop()

    assert (result.images_updated, result.errors) == (6, 0)
    for i in range(6):
        revision = kube.store.get("applications", NS, f"svc-{i}")["spec"]["source"]
        assert revision["targetRevision"] == ("1.4.0" if i % 2 else "1.1.3"), i
    assert result.scans == 2 and proxy.counts["tags"] == 2
    untouched = kube.store.get("applications", NS, "svc-unlabelled")["spec"]["source"]
    assert untouched["targetRevision"] == "1.0.0"
    status = kube.store.get("imageupdaters", NS, "svc")["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    line = (
        f"{NS}/svc-unlabelled chart: template-missing-key: template: missing label chart "
        "(ImageUpdater argocd/svc field spec.applicationRefs[0].charts[0].chart)"
    )
    assert line in conditions["ImagesUpToDate"]["message"].splitlines()
