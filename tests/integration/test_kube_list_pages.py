"""Applications listed a page at a time and reduced to what the updater reads: the product's
Kubernetes client and store against the Kubernetes API fake (its ``limit`` and ``continue``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from argocd_image_updater.controller.stores import KubeStore
from argocd_image_updater.kube.client import APPLICATIONS, LIST_PAGE_SIZE, KubeClient
from argocd_image_updater.model.application import Application
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer

NS = "argocd"


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


@pytest.fixture
async def client(kube: KubeApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    config = kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    async with await KubeClient.connect(str(config)) as client:
        yield client


def put_apps(kube: KubeApiServer, count: int) -> list[str]:
    names = [f"app-{i:03d}" for i in range(count)]
    for name in names:
        kube.store.put(objects.application(name, NS, images=[f"nginx:{name}"]))
    return names


async def test_pages_hold_every_object_once_in_order(
    kube: KubeApiServer, client: KubeClient
) -> None:
    names = put_apps(kube, 7)
    pages = [page async for page in client.list_pages(APPLICATIONS, NS, limit=3)]
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [obj["metadata"]["name"] for page in pages for obj in page] == names
    assert kube.requests[("list", "applications")] == 3


async def test_a_list_that_fits_a_page_is_one_request(
    kube: KubeApiServer, client: KubeClient
) -> None:
    put_apps(kube, 3)
    pages = [page async for page in client.list_pages(APPLICATIONS, NS)]
    assert [len(page) for page in pages] == [3]
    assert kube.requests[("list", "applications")] == 1
    assert LIST_PAGE_SIZE == 500
    assert [page async for page in client.list_pages(APPLICATIONS, "empty")] == [[]]


async def test_the_store_lists_every_page_and_keeps_what_the_view_reads(
    kube: KubeApiServer, client: KubeClient
) -> None:
    put_apps(kube, LIST_PAGE_SIZE + 2)
    listed = await KubeStore(client).list_applications(NS)
    assert len(listed) == LIST_PAGE_SIZE + 2
    assert kube.requests[("list", "applications")] == 2
    full = kube.store.get("applications", NS, "app-501")
    compact = listed[-1]
    assert "resources" in full["status"] and "resources" not in compact["status"]
    assert "destination" in full["spec"] and "destination" not in compact["spec"]
    assert compact["spec"]["source"] == full["spec"]["source"]
    assert compact["metadata"]["resourceVersion"] == full["metadata"]["resourceVersion"]
    view, whole = Application.from_object(compact), Application.from_object(full)
    for field in Application.__dataclass_fields__:
        if field != "kept":  # the object itself, compact or whole
            assert getattr(view, field) == getattr(whole, field), field
    assert view.raw == compact


async def test_the_store_lists_image_updaters_by_pages_and_the_pages_of_applications(
    kube: KubeApiServer, client: KubeClient
) -> None:
    for i in range(LIST_PAGE_SIZE + 1):
        ref = {"namePattern": "*", "images": [{"alias": "a", "imageName": "nginx"}]}
        kube.store.put(objects.image_updater(f"iu-{i:03d}", NS, {"applicationRefs": [ref]}))
    put_apps(kube, 3)
    store = KubeStore(client)
    listed = await store.list_image_updaters(NS)
    assert [obj["metadata"]["name"] for obj in listed] == [
        f"iu-{i:03d}" for i in range(LIST_PAGE_SIZE + 1)
    ]
    assert kube.requests[("list", "imageupdaters")] == 2
    pages = [page async for page in store.application_pages(NS)]
    assert [len(page) for page in pages] == [3]
    assert "resources" in pages[0][0]["status"]  # as listed: the views reduce what they read
