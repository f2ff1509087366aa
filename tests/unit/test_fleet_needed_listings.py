"""Which tag listings a sharded member's static shard needs: worked out again when its own
Applications' jobs, the other members' Applications or ``registries.conf`` change, and the last
answer handed out again while they are the very same objects."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.fleet_scans import FleetScans
from argocd_image_updater.controller.plan_reuse import scan_jobs
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.pipeline.records import CycleApp
from argocd_image_updater_testing import objects


def config(name: str, image: str) -> AppUpdateConfig:
    live = objects.application(name, source_type="Helm", images=[f"{image}:1.0"])
    view = Application.from_object(live)
    return AppUpdateConfig(app=view, images=(ImageSpec("web", image),))


def cycle(registries: RegistryConfig) -> Any:
    context = SimpleNamespace(credentials=CredentialsCache(None), plans=None)
    return SimpleNamespace(registries=registries, context=context)


def own(configs: list[AppUpdateConfig], registries: RegistryConfig) -> list[CycleApp]:
    found = []
    for c in configs:
        jobs = scan_jobs(c, registries, None)
        assert not isinstance(jobs, Exception)
        found.append(CycleApp(c, None, jobs))
    return found


def repositories(needed: tuple[set[Any], dict[Any, Any]]) -> tuple[list[str], list[str]]:
    every, theirs = needed
    return sorted(k.repository for k in every), sorted(k.repository for k in theirs)


def test_the_listings_follow_what_changed_and_are_kept_while_nothing_did() -> None:
    registries = RegistryConfig()
    scans = FleetScans(lists=None)  # type: ignore[arg-type]
    mine = own([config("a", "registry.example.com/team/a")], registries)
    others = [config("b", "registry.example.com/team/b")]
    first = scans._needed(mine, others, cycle(registries))
    assert repositories(first) == (["team/a", "team/b"], ["team/b"])
    assert scans._needed(mine, list(others), cycle(registries)) is first  # the same objects
    needs = scans._mine, scans._theirs
    scans._mine = scans._theirs = None  # type: ignore[assignment]  # not looked at again
    assert scans._needed(list(mine), list(others), cycle(registries)) is first
    scans._mine, scans._theirs = needs
    moved = [config("b", "registry.example.com/team/c")]  # another member's app changed
    assert repositories(scans._needed(mine, moved, cycle(registries))) == (
        ["team/a", "team/c"],
        ["team/c"],
    )
    # registries.conf read again, naming another API for the host: the others' listings anew.
    mirror = RegistryEndpoint("registry.example.com", "mirror", "https://mirror.example.com")
    _, theirs = scans._needed(mine, moved, cycle(RegistryConfig([mirror])))
    assert [k.api_url for k in theirs] == ["https://mirror.example.com"]


def test_a_listing_is_needed_while_any_application_needing_it_is_met() -> None:
    registries = RegistryConfig()
    scans = FleetScans(lists=None)  # type: ignore[arg-type]
    b1, b2 = (
        config("b1", "registry.example.com/team/b"),
        config("b2", "registry.example.com/team/b"),
    )
    c = config("c", "registry.example.com/team/c")
    assert repositories(scans._needed([], [b1, b2, c], cycle(registries))) == (
        ["team/b", "team/c"],
        ["team/b", "team/c"],
    )
    # One of the two needing team/b gone: still needed; then mine need it too: not theirs only.
    assert repositories(scans._needed([], [b2, c], cycle(registries))) == (
        ["team/b", "team/c"],
        ["team/b", "team/c"],
    )
    mine = own([config("a", "registry.example.com/team/b")], registries)
    assert repositories(scans._needed(mine, [b2, c], cycle(registries))) == (
        ["team/b", "team/c"],
        ["team/c"],
    )
    # Mine no longer need it, nor does any other: gone; the same configurations in another
    # order are the same needs.
    assert repositories(scans._needed([], [c], cycle(registries))) == (["team/c"], ["team/c"])
    assert repositories(scans._needed([], [c, b1], cycle(registries))) == (
        ["team/b", "team/c"],
        ["team/b", "team/c"],
    )
    assert repositories(scans._needed([], [b1, c], cycle(registries))) == (
        ["team/b", "team/c"],
        ["team/b", "team/c"],
    )
    _, theirs = scans._needed([], [b1, c], cycle(registries))
    assert sorted(request.repository for request in theirs.values()) == ["team/b", "team/c"]
    # A listing several of the others need comes with the request of the last of them.
    (key,) = [key for key in theirs if key.repository == "team/b"]
    for order in ([b1, c, b2], [b2, c, b1], [b1, b2, c], [b2, b1, c]):
        _, theirs = scans._needed([], order, cycle(registries))
        last = [config for config in order if config is not c][-1]
        assert theirs[key] is scans._theirs.by_key[key][id(last)]
