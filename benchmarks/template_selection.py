"""CPU cost of templated image fields: one ImageUpdater selecting a generated fleet, with a plain
``imageName`` (every Application runs that image) against the same ImageUpdater with
``imageName`` (and a Helm target) written as templates expanded per Application (each runs its
component's image, ``--components`` repositories), and the templated case once more with every
template run by the template engine (the fast path for templates made only of text and
variables turned off). Selection and the scan plan (``plan_scans``, scan keys)
only: no registry, no Kubernetes. Prints a markdown table (CPU time, min and median of
``--rounds``) with the ratio templated / plain of the same run.

Run: ``.venv/bin/python benchmarks/template_selection.py [--apps N] [--components N] [--rounds N]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from argocd_image_updater.config import image_templates
from argocd_image_updater.config.app_index import AppIndex
from argocd_image_updater.config.image_templates import parse_field
from argocd_image_updater.config.imageupdater import parse_image_updater
from argocd_image_updater.config.selection import select_applications
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.plan.jobs import cycle_scan_keys, plan_scans
from common import machine

HOST = "registry.example.com"


def endpoint_for(registry: str, name: str) -> RegistryEndpoint:
    return RegistryEndpoint(prefix=HOST, name=HOST, api_url=f"https://{HOST}")


def fleet(apps: int, components: int) -> list[Application]:
    out = []
    for i in range(apps):
        component = f"c{i % components}"
        out.append(
            Application.from_object(
                {
                    "metadata": {
                        "name": f"shop-{i:05d}",
                        "namespace": "argocd",
                        "labels": {"component": component, "env": f"e{i % 7}"},
                        "annotations": {"team": "shop"},
                    },
                    "spec": {
                        "source": {
                            "repoURL": "https://git.example.com/shop",
                            "chart": "shop",
                            "targetRevision": "1.0.0",
                            "helm": {"parameters": [{"name": "image.tag", "value": "1.0.0"}]},
                        },
                        "destination": {"namespace": "shop"},
                    },
                    "status": {
                        "sourceType": "Helm",
                        "summary": {"images": [f"{HOST}/shop/{component}:1.0.0"]},
                    },
                }
            )
        )
    return out


def updater(image: dict[str, Any]) -> Any:
    return parse_image_updater(
        {
            "metadata": {"name": "shop", "namespace": "argocd"},
            "spec": {"applicationRefs": [{"namePattern": "shop-*", "images": [image]}]},
        }
    )


PLAIN = {"alias": "app", "imageName": f"{HOST}/shop/c0:~1"}
TEMPLATED = {
    "alias": "app",
    "imageName": HOST + '/shop/{{index .AppLabels "component"}}:~1',
    "manifestTargets": {"helm": {"name": "{{.AppName}}.image.name", "tag": "image.tag"}},
}


def _no_fast_path(text: str, name: str) -> None:
    return None


def one_round(cr: Any, index: AppIndex, engine_only: bool) -> tuple[float, int, int]:
    fast_path = image_templates._simple
    if engine_only:  # every template through the engine: what the fast path saves
        image_templates._simple = _no_fast_path  # type: ignore[assignment]
    try:
        parse_field.cache_clear()  # every round parses its templates again, like a new process
        fast_path.cache_clear()
        start = time.process_time()
        result = select_applications(cr, index)
        jobs = [plan_scans(config, endpoint_for) for config in result.configs]
        keys = cycle_scan_keys(jobs)
        return time.process_time() - start, len(result.configs), len(keys)
    finally:
        image_templates._simple = fast_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--apps", type=int, default=5000)
    parser.add_argument("--components", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    # The plain case's fleet runs one image everywhere, so that every image is live in both
    # cases and both plan (and pay the tag policy of) every image.
    templated = AppIndex(fleet(args.apps, args.components))
    cases = {
        "plain `imageName`": (updater(PLAIN), AppIndex(fleet(args.apps, 1)), False),
        "templated `imageName` + Helm name": (updater(TEMPLATED), templated, False),
        "the same, template engine only (no fast path)": (updater(TEMPLATED), templated, True),
    }
    times: dict[str, list[float]] = {}
    shape: dict[str, tuple[int, int]] = {}
    for _ in range(args.rounds):  # interleaved, so that both cases see the same machine load
        for name, (cr, index, engine_only) in cases.items():
            seconds, selected, scans = one_round(cr, index, engine_only)
            times.setdefault(name, []).append(seconds)
            shape[name] = (selected, scans)
    print(machine())
    print()
    print(
        f"| case | apps | scans | CPU min of {args.rounds} | CPU median | per app (min) | "
        "ratio to plain (min) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    plain = min(times["plain `imageName`"])
    for name, values in times.items():
        selected, scans = shape[name]
        best, median = min(values), statistics.median(values)
        print(
            f"| {name} | {selected} | {scans} | {best * 1000:.1f} ms | {median * 1000:.1f} ms | "
            f"{best / selected * 1e6:.1f} µs | {best / plain:.2f}× |"
        )


if __name__ == "__main__":
    main()
