"""A fleet with a good tenant beside hostile ones, for ``run --once`` against the Kubernetes API
fake, a real registry and a :class:`HostileRegistry`.

Every tenant is one Application and one ImageUpdater of its own, in one namespace:

* ``web``: the good tenant, ``1.0.0`` running, ``1.1.0`` in the real registry (must be updated);
* ``redos``: ``allowTags: regexp:^(a+)+$`` over a tag of 40 ``a`` and a ``-`` (catastrophic for a
  backtracking matcher, linear for RE2);
* ``printf``: ``imageName`` is a template printing a width of 999,999,999;
* ``ranges``: ``imageName`` is a template of nested ranges of 100,000 iterations each;
* one per :data:`BEHAVIOURS` of the hostile registry (``huge-chunk``, ``trickle``, …), its image in
  that registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from argocd_image_updater_testing import objects
from argocd_image_updater_testing.hostile_registry import BEHAVIOURS, HostileRegistry
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS: Final = "argocd"
REDOS_TAG: Final = "a" * 40 + "-"
TEMPLATES: Final = {
    "printf": '{{printf "%0999999999d" 1}}',
    "ranges": "{{range 100000}}{{range 100000}}x{{end}}{{end}}",
}
_START: Final = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class HostileFleet:
    good_image: str
    """The good tenant's image (``web``), without tag."""
    hostile_apps: tuple[str, ...]
    kubeconfig: Path
    registries_conf: Path


async def seed_hostile_fleet(
    kube: KubeApiServer,
    registry: RegistryServer,
    hostile: HostileRegistry,
    tmp_path: Path,
    *,
    registry_timeout: str = "2s",
    prefix: str = "shop",
    hostile_tenants: bool = True,
) -> HostileFleet:
    """Seed the fleet, its repositories under ``prefix``; ``registry_timeout``: the hostile registry's
    ``timeout`` in registries.conf; without ``hostile_tenants`` only the good one (a baseline)."""
    good = f"{registry.host}/{prefix}/web"
    redos = f"{registry.host}/{prefix}/redos"
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(("1.0.0", "1.1.0")):
            await pusher.push_image(f"{prefix}/web", tag, created=_START + timedelta(days=i))
        for i, tag in enumerate(("1.0.0", REDOS_TAG)):
            await pusher.push_image(f"{prefix}/redos", tag, created=_START + timedelta(days=i))
    tenants: dict[str, tuple[str, str, dict[str, str]]] = {"web": (good, good, {})}
    if hostile_tenants:
        tenants["redos"] = (redos, redos, {"allowTags": "regexp:^(a+)+$"})
        for name, template in TEMPLATES.items():
            tenants[name] = (good, template, {})
        for behaviour in BEHAVIOURS:
            image = f"{hostile.host}/{prefix}/{behaviour}"
            tenants[behaviour] = (image, image, {})
    for name, (running, image_name, settings) in tenants.items():
        kube.store.put(
            objects.application(
                name, NS, images=[f"{running}:1.0.0"], kustomize_images=[f"{running}:1.0.0"]
            )
        )
        spec = {"alias": "app", "imageName": image_name, **settings}
        ref = {"namePattern": name, "images": [spec]}
        kube.store.put(objects.image_updater(name, NS, {"applicationRefs": [ref]}))
    conf = tmp_path / "registries.conf"
    conf.write_text(
        "registries:\n"
        f"- name: good\n  prefix: {registry.host}\n  api_url: {registry.url}\n"
        f"- name: hostile\n  prefix: {hostile.host}\n  api_url: {hostile.url}\n"
        f"  timeout: {registry_timeout}\n"
    )
    return HostileFleet(
        good_image=good,
        hostile_apps=tuple(name for name in tenants if name != "web"),
        kubeconfig=kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS),
        registries_conf=conf,
    )
