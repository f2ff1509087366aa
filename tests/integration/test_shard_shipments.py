"""``run --sharding``: the changes a replica follows until they are live move with their keys. A
replica that hands a key over stops following its Applications' changes (it never reports them
not shipped because they left its share); the replica that takes the key over — starting, or
already running — follows them from the stored record and reports them shipped once they are
live."""

from __future__ import annotations

import time
from typing import Any

from fleet import registries_conf
from replicas import WITHIN, Replicas
from test_controller_argocd import push_tags
from waiting import eventually

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeStore
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"


async def test_the_changes_followed_move_with_their_keys(
    registry: RegistryServer, repo: str, tmp_path: Any
) -> None:
    await push_tags(registry, repo, ["1.0.0", "1.0.1"])
    image = f"{registry.host}/{repo}"
    store = KubeStore(namespaces=(NS,))
    keys = {f"{NS}/updater-{k}": f"shop-{k}" for k in range(6)}
    for key, app in keys.items():
        running = [f"{image}:1.0.0"]
        store.put(
            objects.application(
                app, NS, images=running, kustomize_images=running, sync_status="OutOfSync"
            )
        )
        refs = [{"namePattern": app, "images": [{"alias": "web", "imageName": f"{image}:~1.0"}]}]
        spec = {"applicationRefs": refs, "shipTimeout": "1h"}
        store.put(objects.image_updater(key.partition("/")[2], NS, spec))
    apps = {f"{NS}/{app}": key for key, app in keys.items()}

    def following(replica: Any) -> set[str]:
        tracker = replica.controller.reporter.shipping
        return {shipment.app for shipment in tracker.pending.values()}

    def shipments(key: str) -> list[dict[str, Any]]:
        cr = store.get("imageupdaters", NS, key.partition("/")[2])
        return list((cr.get("status") or {}).get("shipments") or [])

    fleet = Replicas(
        tmp_path, store, values={"registries_conf_path": str(registries_conf(tmp_path, registry))}
    )
    fleet.keys = set(keys)
    try:
        a = await fleet.start("a")
        await eventually(lambda: following(a) == set(apps), "a follows every change it wrote")
        joined = time.monotonic()
        b = await fleet.start("b")
        await eventually(lambda: fleet.partitioned("ab", joined), "a and b share", within=WITHIN)
        taken = fleet.latest("b", joined) or frozenset()
        moved = {app for app, key in apps.items() if key in taken}
        await eventually(lambda: following(b) == moved, "b follows the changes of its keys")
        await eventually(lambda: following(a) == set(apps) - moved, "a follows only its own")
        await fleet.kill("b")  # a takes b's keys back, and follows their changes again
        await eventually(lambda: following(a) == set(apps), "a follows b's changes", within=WITHIN)
        for app in apps:  # every change goes live: each is reported shipped once
            name = app.partition("/")[2]
            live = [f"{image}:1.0.1"]
            store.put(objects.application(name, NS, images=live, kustomize_images=live))
        for key in keys:
            await eventually(
                lambda key=key: [s.get("state") for s in shipments(key)] == ["Shipped"],
                f"{key} reports its change shipped",
                within=WITHIN,
            )
        assert all(s.get("state") != "NotShipped" for key in keys for s in shipments(key)), (
            "a handed-over change is never reported not shipped"
        )
        assert fleet.double_holds() == []
    finally:
        await fleet.close()
