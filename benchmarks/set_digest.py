"""What ``set --image ALIAS=DIGEST`` costs to find the tag of a digest: registry requests and
wall time.

A real registry (distribution's storage written directly) behind a counting proxy, one
repository of ``--tags`` semver tags (``1.0.0`` … each its own build). The search
(:func:`~argocd_image_updater.controller.set_digest.tag_for_digest`) runs for the digest of the
highest version (the tag the image's policy would choose: asked first), of the middle one, of
the lowest one (asked last) and for a digest no tag has, for a ``semver`` image (a ``HEAD`` per
tag asked, :data:`~argocd_image_updater.controller.set_digest.WINDOW` at a time) and a
``newest-build`` one (its scan reads every manifest: the digests come with it). Each search in
a fresh scanner, as the command runs it.

Minimum: one tag list; ``semver``: as many ``HEAD`` requests as the window holding the match
(8 for the highest version), never more than the tags; ``newest-build``: the scan's manifest and
config ``GET`` per tag, no ``HEAD``. Wall time is min / median of ``--rounds``; the machine is
shared: compare requests.

Run: ``.venv/bin/python benchmarks/set_digest.py [--tags N] [--rounds N]``
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.set_digest import tag_for_digest
from argocd_image_updater.controller.set_version import SetError
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec, UpdateSettings
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.push import write_registry_storage
from argocd_image_updater_testing.registry import RegistryServer
from common import machine, scratch_dir

START = datetime(2024, 1, 1, tzinfo=UTC)
REPO = "bench/web"
NONE = "sha256:" + "0" * 64


def config_for(host: str, strategy: str) -> tuple[AppUpdateConfig, ImageSpec, RegistryConfig]:
    image = f"{host}/{REPO}"
    app = Application.from_object(
        {
            "metadata": {"name": "web", "namespace": "argocd"},
            "spec": {"source": {"repoURL": "https://x", "kustomize": {"images": [image]}}},
            "status": {"sourceType": "Kustomize", "summary": {"images": [f"{image}:1.0.0"]}},
        }
    )
    spec = ImageSpec("web", image, UpdateSettings(strategy=strategy))
    registries = RegistryConfig(
        [RegistryEndpoint(prefix=host, name="bench", api_url=f"http://{host}")]
    )
    return AppUpdateConfig(app, (spec,)), spec, registries


async def search(host: str, strategy: str, digest: str) -> tuple[str, float]:
    """The tag found ("-" for none) and the wall seconds of one search in a fresh scanner."""
    config, spec, registries = config_for(host, strategy)
    started = time.perf_counter()
    async with Scanner() as scanner:
        try:
            found = await tag_for_digest(
                config, spec, digest, registries, scanner, CredentialsCache(None, False)
            )
            tag = found.tag
        except SetError:
            tag = "-"
    return tag, time.perf_counter() - started


async def measure(
    storage: Path, cases: list[tuple[str, str, str]], rounds: int
) -> list[tuple[str, dict[str, int], list[float]]]:
    """Per case (strategy, label, digest): the tag found, the requests of one search (through
    the counting proxy) and the wall times of ``rounds`` searches straight to the registry."""
    out = []
    async with RegistryServer(storage=storage) as registry:
        host = registry.url.split("://", 1)[1]
        async with FaultyProxy(registry.url) as proxy:
            for strategy, _, digest in cases:
                proxy.reset()
                tag, _ = await search(proxy.host, strategy, digest)
                counts = dict(proxy.counts)
                times = [(await search(host, strategy, digest))[1] for _ in range(rounds)]
                out.append((tag, counts, times))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tags", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = scratch_dir("set-digest-")
    try:
        tags = [(f"1.{t}.0", START + timedelta(minutes=t)) for t in range(args.tags)]
        digests = write_registry_storage(root / "storage", {REPO: tags})[REPO]
        high, middle, low = tags[-1][0], tags[len(tags) // 2][0], tags[0][0]
        cases = [
            (strategy, label, digest)
            for strategy in ("semver", "newest-build")
            for label, digest in (
                (f"highest ({high})", digests[high]),
                (f"middle ({middle})", digests[middle]),
                (f"lowest ({low})", digests[low]),
                ("no tag has it", NONE),
            )
        ]
        measured = asyncio.run(measure(root / "storage", cases, args.rounds))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(machine())
    print(f"\n1 repository × {args.tags} tags, {args.rounds} rounds per search\n")
    print(
        "| strategy | digest of | found | tag lists | manifest HEAD | manifest GET | blob GET | wall min / median |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for (strategy, label, _), (tag, counts, times) in zip(cases, measured, strict=True):
        wall = f"{min(times) * 1000:.0f} / {statistics.median(times) * 1000:.0f} ms"
        print(
            f"| {strategy} | {label} | {tag} | {counts.get('tags', 0)} "
            f"| {counts.get('manifest_head', 0)} | {counts.get('manifest', 0)} "
            f"| {counts.get('blob', 0)} | {wall} |"
        )


if __name__ == "__main__":
    main()
