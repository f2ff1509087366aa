"""A cycle reading a watched copy (kept objects, handed out again while unchanged) selects
what a fresh read of the same objects selects, whatever changed in between: views found by
identity, name indexes and candidate positions kept across cycles."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from argocd_image_updater.controller.kept_collection import KeptCollection
from argocd_image_updater.controller.sources import LegacyFilter, collect
from argocd_image_updater.controller.views import ApplicationViews, ImageUpdaterViews
from argocd_image_updater.pipeline.records import Collected
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kept_copy import KeptCopy

IMAGE_LIST = "argocd-image-updater.argoproj.io/image-list"


class Copy(KeptCopy):
    def put_app(self, name: str, image: str, labels: dict[str, str] | None = None) -> None:
        obj = objects.application(name, images=[image], kustomize_images=[image])
        obj["metadata"]["labels"] = labels or {}
        if name.startswith("legacy"):
            obj["metadata"]["annotations"] = {IMAGE_LIST: f"app={image.split(':')[0]}"}
        self.apps[name] = self.stamped(obj)

    def put_updater(self, name: str, patterns: list[str]) -> None:
        refs = [
            {"namePattern": p, "images": [{"alias": "app", "imageName": "repo/img"}]}
            for p in patterns
        ]
        self.updaters[name] = self.stamped(
            objects.image_updater(name, spec={"applicationRefs": refs})
        )


class Fresh:
    """The same objects, listed as new objects every time."""

    def __init__(self, copy: KeptCopy) -> None:
        self.copy = copy

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        return None

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]:
        return [dict(obj) for obj in self.copy.apps.values()]

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        return [dict(obj) for obj in self.copy.updaters.values()]


def selected(collected: Collected) -> list[tuple[str, str, tuple[str, ...]]]:
    return [
        (state.name if state is not None else "", config.app.name, config.app.live_images)
        for config, state in collected.configs
    ]


@pytest.mark.parametrize(("seed", "legacy"), [(7, True), (11, True), (13, False)])
async def test_random_changes_select_as_a_fresh_read_does(seed: int, legacy: bool) -> None:
    rng = random.Random(seed)
    copy = Copy()
    names = [f"app-{i}" for i in range(12)] + ["legacy-a", "legacy-b"]
    for name in names:
        copy.put_app(name, "repo/img:1")
    patterns = ["app-1*", "app-2", "app-*", "*-3", "app-[45]", "legacy-a"]
    specs = {f"iu-{i}": rng.sample(patterns, 2) for i in range(4)}
    for name, spec in specs.items():
        copy.put_updater(name, spec)
    views, cr_views, whole = ApplicationViews(), ImageUpdaterViews(), KeptCollection()
    legacy_filter = LegacyFilter(enabled=legacy)
    for step in range(80):
        for _ in range(rng.randrange(4)):  # none to three changes between two cycles
            change = rng.randrange(8)
            if change in (0, 5):  # a new image: a new object in the same place
                copy.put_app(rng.choice(sorted(copy.apps)), f"repo/img:{step}")
            elif change == 6:  # new labels, in the same place
                copy.put_app(rng.choice(sorted(copy.apps)), "repo/img:1", {"team": "y"})
            elif change == 1:  # an Application added (names in another order)
                copy.put_app(f"app-{rng.randrange(40)}", "repo/img:1", {"team": "x"})
            elif change == 2 and len(copy.apps) > 3:
                del copy.apps[rng.choice(sorted(copy.apps))]
            elif change == 3:  # another spec (or a new ImageUpdater)
                name = f"iu-{rng.randrange(6)}"
                specs[name] = rng.sample(patterns, 2)
                copy.put_updater(name, specs[name])
            elif change == 7 and copy.updaters:  # a status written: the same spec
                name = rng.choice(sorted(copy.updaters))
                copy.put_updater(name, specs[name])
            elif change == 4 and len(copy.updaters) > 1:
                del copy.updaters[rng.choice(sorted(copy.updaters))]
        kept = await collect(copy, None, legacy_filter, True, views, cr_views, whole)
        fresh = await collect(Fresh(copy), None, legacy_filter, True)
        assert selected(kept) == selected(fresh), f"step {step}"
        assert kept.listed == fresh.listed
        assert [(s.name, s.error, s.apps, s.resource_version) for s in kept.crs] == [
            (s.name, s.error, s.apps, s.resource_version) for s in fresh.crs
        ]
        kept.configs, kept.crs = [], []  # narrowed by a cycle: the next one is whole again
    assert views.reused  # unchanged objects were found again
    assert whole.handed_out  # and whole collections, where nothing changed
    assert whole.mended  # or mended, where objects were replaced in their places


async def test_an_unchanged_copy_hands_out_the_last_collection_and_its_lines_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    copy = Copy()
    copy.put_app("app-1", "repo/img:1")
    copy.put_updater("iu-a", ["app-*"])
    copy.put_updater("iu-b", ["app-1"])  # selects it too: said every cycle
    views, cr_views, whole = ApplicationViews(), ImageUpdaterViews(), KeptCollection()

    async def cycle() -> tuple[Collected, list[str]]:
        caplog.clear()
        found = await collect(copy, None, LegacyFilter(), True, views, cr_views, whole)
        return found, [r.getMessage() for r in caplog.records]

    caplog.set_level(logging.WARNING)
    first, said = await cycle()
    assert any("more than one ImageUpdater" in line for line in said)
    second, said_again = await cycle()
    assert whole.handed_out == 1 and said_again == said
    assert second is not first and second.configs is not first.configs
    assert [id(c) for c, _ in second.configs] == [id(c) for c, _ in first.configs]
    assert [id(s) for s in second.crs] == [id(s) for s in first.crs]
    assert second.shared  # the states' objects are the copy's: nothing to trim

    copy.put_app("app-1", "repo/img:2")  # replaced in its place: mended
    third, said_third = await cycle()
    assert (whole.handed_out, whole.mended) == (1, 1) and said_third == said
    assert [c.app.live_images for c, _ in third.configs] == [("repo/img:2",)]
    assert third.crs[0] is first.crs[0]  # its ImageUpdaters did not change

    copy.put_app("app-2", "repo/img:1")  # added: collected whole
    fourth, _ = await cycle()
    assert (whole.handed_out, whole.mended) == (1, 1)
    assert [c.app.name for c, _ in fourth.configs] == ["app-1", "app-2"]

    unstamped = Fresh(copy)  # a store that cannot tell: collected every time
    for _ in range(2):
        await collect(unstamped, None, LegacyFilter(), True, views, cr_views, whole)
    assert whole.handed_out == 1
