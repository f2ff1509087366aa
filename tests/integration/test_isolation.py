"""Fail-safe cycles end to end (Kubernetes API fake, real registry): a tenant's broken input is
reported on its own objects while every other tenant is updated in the same cycle, and a tag list
cut short never downgrades a running image."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import NS, START, registries_conf, seed_web_app
from test_controller_argocd import close_all, make_controller

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


def kustomize_images(kube: KubeApiServer, name: str) -> list[str]:
    app = kube.store.get("applications", NS, name)
    images: list[str] = app["spec"]["source"]["kustomize"]["images"]
    return images


def condition(kube: KubeApiServer, name: str, kind: str) -> dict[str, Any]:
    status = kube.store.get("imageupdaters", NS, name).get("status") or {}
    return next(c for c in status.get("conditions", []) if c["type"] == kind)


def warnings_on(kube: KubeApiServer, name: str) -> list[str]:
    return [
        e["message"]
        for e in kube.store.list("events", NS)
        if e["type"] == "Warning" and e["involvedObject"]["name"] == name
    ]


def tenant(kube: KubeApiServer, name: str, image: str, ref: dict[str, Any], **put: Any) -> None:
    """An Application ``name`` running ``image:1.0.0`` and an ImageUpdater ``name`` for it."""
    kube.store.put(
        objects.application(
            name, NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
        )
    )
    entry = {"namePattern": name, "images": [{"alias": "web", "imageName": image}], **ref}
    kube.store.put(objects.image_updater(name, NS, {"applicationRefs": [entry]}), **put)


async def test_broken_tenants_are_reported_and_the_others_updated_in_the_same_cycle(
    kube: KubeApiServer,
    registry: RegistryServer,
    repo: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    image, conf = await seed_web_app(kube, registry, repo, tmp_path, ["1.0.0", "1.1.0"])
    # accepted by the CRD schema, unusable: an unknown credential type
    tenant(kube, "creds", image, {"commonUpdateSettings": {"pullSecret": "nonsense:whatever"}})
    # rejected by the schema (stored anyway, as an older CRD or a manifest file may let it in)
    tenant(kube, "typed", image, {"commonUpdateSettings": {"forceUpdate": "yes"}}, validate=False)
    # usable with warnings: unknown strategy (semver), an allowTags regexp that does not compile
    tenant(kube, "strategy", image, {"commonUpdateSettings": {"updateStrategy": "newest-buildz"}})
    tenant(kube, "regexp", image, {"commonUpdateSettings": {"allowTags": "regexp:^1.("}})
    tenant(kube, "pattern", image, {"namePattern": "pattern-["})
    controller, closers = await make_controller(kube, tmp_path, conf, once=False)
    caplog.set_level(logging.DEBUG, logger="argocd_image_updater")
    try:
        result = await controller.cycle()
    finally:
        await close_all(closers)

    # the other tenants are updated in this very cycle
    assert kustomize_images(kube, "web") == [f"{image}:1.1.0"]
    assert kustomize_images(kube, "strategy") == [f"{image}:1.1.0"]
    assert kustomize_images(kube, "creds") == [f"{image}:1.0.0"]
    assert kustomize_images(kube, "regexp") == [f"{image}:1.0.0"]
    assert result.images_updated == 2
    assert result.errors >= 2  # the credential reference and the unusable ImageUpdater

    creds_field = "ImageUpdater argocd/creds field spec.applicationRefs[0].commonUpdateSettings"
    images = condition(kube, "creds", "ImagesUpToDate")
    assert images["status"] == "False"
    assert f"{creds_field}.pullSecret: invalid credential reference" in images["message"]
    assert any(f"{creds_field}.pullSecret" in m for m in warnings_on(kube, "creds"))
    # the API server refuses the status of an object its schema rejects: the event tells
    typed = "spec.applicationRefs[0].commonUpdateSettings.forceUpdate: expected true or false"
    assert any("argocd/typed" in m and typed in m for m in warnings_on(kube, "typed"))
    ready = condition(kube, "pattern", "Ready")
    assert ready["status"] == "False"
    assert (
        "ImageUpdater argocd/pattern field spec.applicationRefs[0].namePattern"
        in (ready["message"])
    )

    strategy_field = "ImageUpdater argocd/strategy field spec.applicationRefs[0]."
    assert (
        f"warning: {strategy_field}commonUpdateSettings.updateStrategy: Unknown sort option "
        "newest-buildz -- using semver" in condition(kube, "strategy", "ImagesUpToDate")["message"]
    )
    assert "regexp '^1.('" in condition(kube, "regexp", "ImagesUpToDate")["message"]

    logged = [r for r in caplog.records if r.levelno == logging.WARNING]
    unknown = [r for r in logged if "Unknown sort option newest-buildz" in r.getMessage()]
    assert len(unknown) == 1  # once per cycle per image
    assert "updateStrategy" in unknown[0].getMessage()
    assert unknown[0].fields["imageUpdater_name"] == "strategy"  # type: ignore[attr-defined]
    assert unknown[0].fields["application"] == "argocd/strategy"  # type: ignore[attr-defined]
    regexp = [r for r in logged if "could not compile regexp '^1.('" in r.getMessage()]
    assert len(regexp) == 1 and "allowTags" in regexp[0].getMessage()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(f"{creds_field}.pullSecret" in m for m in errors)


async def test_a_tag_list_cut_short_never_downgrades_and_the_newest_is_written_after(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for day, tag in enumerate(("1.0.0", "1.3.0", "1.5.0", "1.6.0"), start=1):
            await pusher.push_image(repo, tag, created=START + timedelta(days=day))
    image = f"{registry.host}/{repo}"
    kube.store.put(
        objects.application(
            "web", NS, images=[f"{image}:1.5.0"], kustomize_images=[f"{image}:1.5.0"]
        )
    )
    ref = {"namePattern": "web", "images": [{"alias": "web", "imageName": image}]}
    kube.store.put(objects.image_updater("web", NS, {"applicationRefs": [ref]}))
    async with FaultyProxy(registry.url) as proxy:
        proxy.paginate(2)
        proxy.unlink()  # the first page loses its Link header: 1.0.0 and 1.3.0 look like all
        conf = registries_conf(tmp_path, registry)
        conf.write_text(
            f"registries:\n- name: t\n  prefix: {registry.host}\n  api_url: {proxy.url}\n"
        )
        controller, closers = await make_controller(kube, tmp_path, conf, once=False)
        try:
            cut = await controller.cycle()
            assert kustomize_images(kube, "web") == [f"{image}:1.5.0"]
            (result,) = cut.apps[0].plan.results  # type: ignore[union-attr]
            assert result.reason == "would-downgrade"
            assert "'1.3.0' is a lower version than the running '1.5.0'" in result.message
            assert cut.images_updated == 0
            lines = condition(kube, "web", "ImagesUpToDate")["message"]
            assert f"would-downgrade {image}:1.5.0 -> {image}:1.3.0" in lines
            assert proxy.faults[0].applied == 1

            recovered = await controller.cycle()  # every page is read again
        finally:
            await close_all(closers)
    assert recovered.images_updated == 1
    assert kustomize_images(kube, "web") == [f"{image}:1.6.0"]
