"""Requests the Kubernetes API throttles, fails or drops, against the API fake over a socket:
which are sent again, after how long (the server's Retry-After, else a backoff), how often,
and that a write that may have been applied is never sent twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from argocd_image_updater.kube.client import APPLICATIONS, CONFIGMAPS, KubeClient, KubeError
from argocd_image_updater.kube.retry import RetryPolicy
from argocd_image_updater.observe import metrics
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer

NS = "argocd"


class Waits(list[float]):
    """The waits the client asked for (none of them is actually waited)."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
async def server() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer() as served:
        served.store.put(objects.application("web", NS, images=["nginx:1"]))
        yield served


@pytest.fixture
async def client(server: KubeApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    config = server.write_kubeconfig(tmp_path / "config", namespace=NS)
    async with await KubeClient.connect(str(config)) as kube:
        kube.retry = RetryPolicy(sleep=Waits(), jitter=lambda: 1.0)
        yield kube


def waits(client: KubeClient) -> Waits:
    assert isinstance(client.retry.sleep, Waits)
    return client.retry.sleep


def retries(reason: str) -> float:
    return metrics.K8S_API_RETRIES.labels(reason)._value.get()


async def test_a_429_waits_as_the_server_says(server: KubeApiServer, client: KubeClient) -> None:
    before = retries("429")
    server.fail_next(2, verb="list", resource="applications", status=429, retry_after="3")
    items, _ = await client.list_objects(APPLICATIONS, NS)
    assert [i["metadata"]["name"] for i in items] == ["web"]
    assert waits(client) == [3.0, 3.0]
    assert server.request_count("list", "applications") == 3
    assert retries("429") == before + 2


async def test_5xx_back_off_exponentially_and_give_up(
    server: KubeApiServer, client: KubeClient
) -> None:
    server.fail_next(3, verb="get", resource="applications", status=503, retry_after=None)
    await client.get_object(APPLICATIONS, NS, "web")
    assert waits(client) == [0.25, 0.5, 1.0]
    waits(client).clear()
    server.fail_next(50, verb="get", resource="applications", status=500)
    with pytest.raises(KubeError) as err:
        await client.get_object(APPLICATIONS, NS, "web")
    assert err.value.status == 500
    assert server.request_count("get", "applications") == 4 + 10  # ten attempts in all
    assert waits(client) == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0]
    assert sum(waits(client)) <= 30.0


async def test_a_retry_after_beyond_the_budget_is_not_waited(
    server: KubeApiServer, client: KubeClient
) -> None:
    server.fail_next(1, verb="get", status=503, retry_after="120")
    with pytest.raises(KubeError) as err:
        await client.get_object(APPLICATIONS, NS, "web")
    assert err.value.status == 503 and waits(client) == []


async def test_unguarded_writes_are_resent_only_after_a_429(
    server: KubeApiServer, client: KubeClient
) -> None:
    body = {"metadata": {"name": "c1"}, "data": {"a": "1"}}
    server.fail_next(1, verb="create", resource="configmaps", status=500)
    with pytest.raises(KubeError) as err:
        await client.create_configmap(NS, body)
    assert err.value.status == 500 and server.request_count("create", "configmaps") == 1
    server.fail_next(1, verb="create", resource="configmaps", status=429)
    await client.create_configmap(NS, body)
    assert server.request_count("create", "configmaps") == 3
    # A merge patch without a resourceVersion is not resent after a 503 either.
    server.store.put(objects.image_updater("iu", NS))
    server.fail_next(1, verb="patch", resource="imageupdaters/status", status=503)
    with pytest.raises(KubeError):
        await client.merge_patch_status(
            ("argocd-image-updater.argoproj.io", "v1alpha1", "imageupdaters"),
            NS,
            "iu",
            {"status": {}},
        )
    assert server.request_count("patch", "imageupdaters/status") == 1


async def test_guarded_writes_are_resent_after_a_5xx(
    server: KubeApiServer, client: KubeClient
) -> None:
    app = await client.get_object(APPLICATIONS, NS, "web")
    guard = {"op": "replace", "path": "/metadata/resourceVersion"}
    guard["value"] = app["metadata"]["resourceVersion"]
    label = {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}
    server.fail_next(2, verb="patch", resource="applications", status=502)
    patched = await client.json_patch(APPLICATIONS, NS, "web", [guard, label])
    assert patched["metadata"]["labels"] == {"a": "b"}
    assert server.request_count("patch", "applications") == 3


async def test_a_reset_connection(server: KubeApiServer, client: KubeClient) -> None:
    before = retries("connection")
    server.reset_next(1, verb="get", resource="applications")
    assert (await client.get_object(APPLICATIONS, NS, "web"))["metadata"]["name"] == "web"
    assert retries("connection") == before + 1
    # A create whose connection drops after it was applied is not sent again: the caller
    # hears that the API was unreachable, and the object exists once.
    server.reset_next(1, verb="create", resource="configmaps", after_apply=True)
    with pytest.raises(KubeError, match="unreachable") as err:
        await client.create_configmap(NS, {"metadata": {"name": "once"}, "data": {}})
    assert err.value.status == 0
    assert server.request_count("create", "configmaps") == 1
    assert server.store.get("configmaps", NS, "once")["metadata"]["name"] == "once"
    # A guarded replace is sent again; when the first copy was applied, the second one is a
    # conflict that changes nothing.
    current = await client.get_configmap(NS, "once")
    current["data"] = {"k": "v"}
    server.reset_next(1, verb="update", resource="configmaps", after_apply=True)
    with pytest.raises(KubeError) as conflict:
        await client.replace_configmap(NS, "once", current)
    assert conflict.value.is_conflict
    assert server.request_count("update", "configmaps") == 2
    assert server.store.get("configmaps", NS, "once")["data"] == {"k": "v"}
    assert CONFIGMAPS[2] == "configmaps"
