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
from argocd_image_updater.report.log import get_logger
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
            failures = 0
            for scenario in SCENARIOS:
                click.echo(f"\n=== {scenario.title}")
                click.echo(
                    f"$ argocd-image-updater test {image} --update-strategy {scenario.strategy}"
                    + (
                        f" --semver-constraint '{scenario.constraint}'"
                        if scenario.constraint
                        else ""
                    )
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
                    chosen = (
                        f"{selection.chosen.name}@{digest}" if digest else selection.chosen.name
                    )
                    click.echo(f"-> latest image according to constraint is {image}:{chosen}")
            return 1 if failures else 0
        finally:
            registry.stop()


@click.command("demo", help="Run the built-in demo against a local registry with sample tags")
@click.option("--verbose", is_flag=True, help="show the updater's log lines")
def demo_command(verbose: bool) -> None:
    logging_setup.setup("info" if verbose else "error", "text")
    sys.exit(asyncio.run(demo(verbose)))
