"""CPU cost of a cycle's selection of the fleet (``controller.sources.collect``) from a watched
copy: ``--apps`` Applications and ``--updaters`` ImageUpdaters (each selecting its Applications
by exact name, each Application one image) handed out as a watched copy hands them out (kept
objects, an unchanged one as the very same object, a changed one as a new object). Measures
cycles where nothing changed ("steady") and cycles where ``--churn`` Applications and as many
ImageUpdaters (a status written) were replaced since the last cycle ("churn"), each with the
last collection kept as the controller keeps it (handed out again, or mended:
``controller.kept_collection``) and without it (every object looked at by identity). No
registry, no Kubernetes. Prints a markdown table: CPU ms a cycle, min and median of
``--rounds`` × 10 cycles.

Run: ``.venv/bin/python benchmarks/select_fleet.py [--apps N] [--updaters N] [--churn N]
[--rounds N]`` (with ``PYTHONPATH`` pointing at another tree's ``src`` to measure that tree).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from argocd_image_updater.config.imageupdater import compact_image_updater
from argocd_image_updater.controller.kept_collection import KeptCollection
from argocd_image_updater.controller.sources import LegacyFilter, collect
from argocd_image_updater.controller.views import ApplicationViews, ImageUpdaterViews
from argocd_image_updater.controller.watched_objects import reduced_application
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kept_copy import KeptCopy
from common import machine

NS = "argocd"


class WatchedCopy(KeptCopy):
    """The fleet as a watched copy keeps it."""

    def __init__(self, updaters: int, apps_per: int) -> None:
        super().__init__()
        for i in range(updaters):
            self.put_updater(i, apps_per)
            for j in range(apps_per):
                self.put_app(f"t{i:05d}-e{j}", f"registry.example.com/r{(i * apps_per + j) % 500}")

    def put_updater(self, i: int, apps_per: int, status: int = 0) -> None:
        refs = [
            {"namePattern": f"t{i:05d}-e{j}", "images": [{"alias": "app", "imageName": "x"}]}
            for j in range(apps_per)
        ]
        obj = objects.image_updater(f"t{i:05d}", NS, {"applicationRefs": refs})
        obj["status"] = {"reviewedApplications": status}
        self.updaters[f"t{i:05d}"] = compact_image_updater(self.stamped(obj), None)

    def put_app(self, name: str, image: str, tag: str = "1.0.0") -> None:
        running = f"{image}:{tag}"
        obj = objects.application(name, NS, images=[running], kustomize_images=[running])
        self.apps[name] = reduced_application(self.stamped(obj))


async def cycles(
    copy: WatchedCopy, n: int, churn: int, apps_per: int, step: list[int], kept: bool
) -> list[float]:
    views, cr_views = ApplicationViews(), ImageUpdaterViews()
    whole = KeptCollection() if kept else None
    await collect(copy, None, LegacyFilter(), True, views, cr_views, whole)  # the cold one
    names, updaters = sorted(copy.apps), len(copy.updaters)
    spent = []
    for _ in range(n):
        for _ in range(churn):
            step[0] += 1
            name = names[(step[0] * 7919) % len(names)]
            copy.put_app(name, copy.apps[name]["status"]["summary"]["images"][0].split(":")[0])
            copy.put_updater((step[0] * 104729) % updaters, apps_per, step[0])
        began = time.process_time()
        await collect(copy, None, LegacyFilter(), True, views, cr_views, whole)
        spent.append(time.process_time() - began)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=5000)
    parser.add_argument("--updaters", type=int, default=1000)
    parser.add_argument("--churn", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    apps_per = max(1, args.apps // args.updaters)
    copy = WatchedCopy(args.updaters, apps_per)
    rows: dict[str, list[float]] = {}
    step = [0]
    for _ in range(args.rounds):
        for kept, how in ((True, "collection kept"), (False, "each object by identity")):
            steady = asyncio.run(cycles(copy, 10, 0, apps_per, step, kept))
            rows.setdefault(f"steady, {how}", []).extend(steady)
            churn = asyncio.run(cycles(copy, 10, args.churn, apps_per, step, kept))
            rows.setdefault(f"churn ({args.churn} of each), {how}", []).extend(churn)
    print(f"Machine: {machine()}\n")
    print(f"{args.updaters} ImageUpdaters × {apps_per} Applications, watched copy\n")
    print("| cycle | CPU ms, min | CPU ms, median |")
    print("|---|---:|---:|")
    for name, spent in rows.items():
        print(f"| {name} | {min(spent) * 1000:.1f} | {statistics.median(spent) * 1000:.1f} |")


if __name__ == "__main__":
    main()
