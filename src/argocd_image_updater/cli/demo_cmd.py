"""``argocd-image-updater demo``: the main job on a built-in, self-contained example.

A real registry (Debian's ``docker-registry``) is started on loopback and filled with sample
tags; then the tag choice runs against it with each update strategy, showing every tag's verdict.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from argocd_image_updater.cli.test_cmd import TestFailed, TestOptions, print_explain, run_test
from argocd_image_updater.model.platform import Platform
from argocd_image_updater.report import log as logging_setup
from argocd_image_updater.report.log import Logger, get_logger
from argocd_image_updater.sandbox.push import ImagePusher
from argocd_image_updater.sandbox.registry import RegistryServer, RegistryServerError

REPO = "demo/web"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
# tag, days after START, multi-platform
SAMPLE_TAGS = (
    ("1.0.0", 0, False),
    ("1.0.1", 10, False),
    ("1.1.0", 20, False),
    ("1.2.0-rc.1", 30, False),
    ("2.0.0", 40, True),
    ("sha-5f2c1e0", 45, False),
    ("sha-9ab77d1", 50, False),
    ("latest", 50, False),
    ("nightly", 55, False),
)


@dataclass(frozen=True, slots=True)
class Scenario:
    title: str
    strategy: str = "semver"
    constraint: str = ""
    allow: str = ""
    ignore: tuple[str, ...] = ()


SCENARIOS = (
    Scenario("semver, no constraint: the highest release", ignore=("latest", "nightly")),
    Scenario("semver ~1.0: patch releases of 1.0 only", constraint="~1.0"),
    Scenario(
        "semver >=1.1.0-0: pre-releases admitted by the constraint", constraint=">=1.1.0-0 <2"
    ),
    Scenario("newest-build among commit tags", strategy="newest-build", allow="regexp:^sha-"),
    Scenario("alphabetical with ignore-tags", strategy="alphabetical", ignore=("latest", "sha-*")),
    Scenario("digest: follow the mutable tag 'latest'", strategy="digest", constraint="latest"),
)


async def fill(registry: RegistryServer) -> None:
    async with ImagePusher(registry.url) as pusher:
        for tag, days, multi in SAMPLE_TAGS:
            created = START + timedelta(days=days)
            if multi:
                await pusher.push_index(REPO, tag, [(AMD64, created), (ARM64, created)], oci=True)
            else:
                await pusher.push_image(REPO, tag, created=created, labels={"demo.tag": tag})


async def tag_choice(image: str, conf: Path, log: Logger) -> int:
    """Part 1: the tag each update strategy picks, with every tag's verdict."""
    failures = 0
    for scenario in SCENARIOS:
        click.echo(f"\n=== {scenario.title}")
        click.echo(
            f"$ argocd-image-updater test {image} --update-strategy {scenario.strategy}"
            + (f" --semver-constraint '{scenario.constraint}'" if scenario.constraint else "")
            + (f" --allow-tags '{scenario.allow}'" if scenario.allow else "")
            + "".join(f" --ignore-tags '{i}'" for i in scenario.ignore)
            + " --explain"
        )
        opts = TestOptions(
            image=image,
            semver_constraint=scenario.constraint,
            update_strategy=scenario.strategy,
            allow_tags=scenario.allow,
            ignore_tags=scenario.ignore,
            platforms=("linux/amd64",),
            registries_conf_path=str(conf),
            explain=True,
        )
        try:
            selection = await run_test(opts, log)
        except TestFailed as err:
            click.echo(f"error: {err}")
            failures += 1
            continue
        print_explain(selection)
        if selection.chosen is None:
            click.echo(f"-> no tag: {selection.summary}")
        else:
            digest = selection.chosen.digest if scenario.strategy == "digest" else ""
            chosen = f"{selection.chosen.name}@{digest}" if digest else selection.chosen.name
            click.echo(f"-> latest image according to constraint is {image}:{chosen}")
    return failures


async def full_cycle(image: str, conf: Path, tmp: Path) -> int:
    """Part 2: one update cycle of the controller against a stand-in Kubernetes API: one
    Application updated in place (``argocd`` write-back), one through a commit to Git."""
    from argocd_image_updater.cli.run_cmd import build_controller, close_resource
    from argocd_image_updater.config.settings import resolve
    from argocd_image_updater.sandbox import objects
    from argocd_image_updater.sandbox.git_servers import bare_repo, log_subjects, show
    from argocd_image_updater.sandbox.kube import KubeApiServer

    click.echo("\n=== A full update cycle (argocd-image-updater run --once)")
    kustomization = f"resources:\n- deployment.yaml\nimages:\n- name: {image}\n  newTag: 1.0.0\n"
    remote = bare_repo(tmp / "deploy.git", files={"apps/shop/kustomization.yaml": kustomization})
    async with KubeApiServer(namespaces=("argocd",)) as kube:
        kube.store.put(
            objects.application(
                "shop-staging", images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
            )
        )
        kube.store.put(
            objects.application(
                "shop-prod",
                images=[f"{image}:1.0.0"],
                repo_url=f"file://{remote}",
                path="apps/shop",
                target_revision="main",
            )
        )
        kube.store.put(
            objects.image_updater(
                "shop",
                spec={
                    "applicationRefs": [
                        {
                            "namePattern": "shop-staging",
                            "images": [{"alias": "web", "imageName": f"{image}:~1.0"}],
                        },
                        {
                            "namePattern": "shop-prod",
                            "images": [{"alias": "web", "imageName": f"{image}:~1.0"}],
                            "writeBackConfig": {
                                "method": "git",
                                "gitConfig": {"writeBackTarget": "kustomization"},
                            },
                        },
                    ]
                },
            )
        )
        click.echo(
            "ImageUpdater 'shop' watches shop-staging (written back to the Application) and "
            "shop-prod (written back to Git), both running 1.0.0, constraint ~1.0."
        )
        settings = resolve(
            "run",
            {
                "kubeconfig": str(kube.write_kubeconfig(tmp / "kubeconfig", namespace="argocd")),
                "registries_conf_path": str(conf),
                "git_cache_dir": str(tmp / "clones"),
                "git_commit_message_path": str(tmp / "default-template"),
                "once": True,
            },
            env={},
        )
        controller, closers = await build_controller(settings)
        try:
            result = await controller.cycle()
        finally:
            for closer in reversed(closers):
                await close_resource(closer)
        staging = kube.store.get("applications", "argocd", "shop-staging")
        click.echo(
            f"applications={len(result.apps)} images_updated={result.images_updated} "
            f"errors={result.errors} registry scans={result.scans}"
        )
        click.echo(
            "shop-staging spec.source.kustomize.images: "
            f"{staging['spec']['source']['kustomize']['images']}"
        )
    home = tmp / "git-home"
    home.mkdir(exist_ok=True)
    click.echo(f"shop-prod: commit '{log_subjects(remote, 'main', home=home)[0]}' with")
    click.echo(show(remote, "main", "apps/shop/kustomization.yaml", home=home) or "")
    return 1 if result.errors or result.images_updated != 2 else 0


async def demo(verbose: bool) -> int:
    log = get_logger("demo", command="demo")
    with tempfile.TemporaryDirectory(prefix="argocd-image-updater-demo-") as tmp:
        try:
            registry = RegistryServer().start()
        except RegistryServerError as err:
            click.echo(f"demo: {err}", err=True)
            return 1
        try:
            click.echo(
                f"Started a local registry at {registry.url}; pushing sample tags of {REPO} ..."
            )
            await fill(registry)
            conf = Path(tmp) / "registries.conf"
            conf.write_text(
                f"registries:\n- name: demo\n  prefix: {registry.host}\n  api_url: {registry.url}\n"
            )
            image = f"{registry.host}/{REPO}"
            failures = await tag_choice(image, conf, log)
            failures += await full_cycle(image, conf, Path(tmp))
            return 1 if failures else 0
        finally:
            registry.stop()


@click.command("demo", help="Run the built-in demo against a local registry with sample tags")
@click.option("--verbose", is_flag=True, help="show the updater's log lines")
def demo_command(verbose: bool) -> None:
    logging_setup.setup("info" if verbose else "error", "text")
    sys.exit(asyncio.run(demo(verbose)))
