"""A cycle reading a watched copy (kept objects, handed out again while unchanged) selects
what a fresh read of the same objects selects, whatever changed in between: views found by
identity, name indexes and candidate positions kept across cycles."""

from __future__ import annotations

import random
from typing import Any

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


async def test_random_changes_select_as_a_fresh_read_does() -> None:
    rng = random.Random(7)
    copy = Copy()
    names = [f"app-{i}" for i in range(12)] + ["legacy-a", "legacy-b"]
    for name in names:
        copy.put_app(name, "repo/img:1")
    patterns = ["app-1*", "app-2", "app-*", "*-3", "app-[45]", "legacy-a"]
    for i in range(4):
        copy.put_updater(f"iu-{i}", rng.sample(patterns, 2))
    views, cr_views = ApplicationViews(), ImageUpdaterViews()
    for step in range(60):
        change = rng.randrange(6)
        if change == 0:  # a new image: a new object of the same name
            copy.put_app(rng.choice(sorted(copy.apps)), f"repo/img:{step}")
        elif change == 1:  # an Application added (names in another order)
            copy.put_app(f"app-{rng.randrange(40)}", "repo/img:1", {"team": "x"})
        elif change == 2 and len(copy.apps) > 3:
            del copy.apps[rng.choice(sorted(copy.apps))]
        elif change == 3:
            copy.put_updater(f"iu-{rng.randrange(6)}", rng.sample(patterns, 2))
        elif change == 4 and len(copy.updaters) > 1:
            del copy.updaters[rng.choice(sorted(copy.updaters))]
        kept = await collect(copy, None, LegacyFilter(), True, views, cr_views)
        fresh = await collect(Fresh(copy), None, LegacyFilter(), True)
        assert selected(kept) == selected(fresh), f"step {step}"
        assert kept.listed == fresh.listed
    assert views.reused  # unchanged objects were found again
