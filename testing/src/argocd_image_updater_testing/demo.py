"""``argocd-image-updater demo``: the main job on a built-in, self-contained example.

A real registry (Debian's ``docker-registry``) is started on loopback and filled with sample
tags; then the tag choice runs against it with each update strategy, showing every tag's verdict;
then one update cycle runs in local mode on a Git checkout holding two Applications and an
ImageUpdater, and the plan, the reasons for what was skipped and the resulting commits are shown.
Everything lives in a temporary directory that is removed at the end.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from argocd_image_updater.cli.test_run import print_explain, run_test_explained
from argocd_image_updater.cli.test_setup import TestFailed, TestOptions
from argocd_image_updater.model.platform import Platform
from argocd_image_updater.observe import log as logging_setup
from argocd_image_updater.observe.log import Logger, get_logger
from argocd_image_updater.pipeline.records import CycleResult
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer, RegistryServerError

REPO = "demo/web"
WORKER_REPO = "demo/worker"
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
    ("release-20260105", 0, False),
    ("release-20260204", 30, False),
    ("release-20260216", 42, False),
)
# The worker image: no release of the 3.x line the ImageUpdater asks for exists yet.
WORKER_TAGS = (("1.0.0", 0), ("1.4.0", 20), ("2.1.0", 40))


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
    Scenario(
        "alphabetical among date-stamped release tags (the last name is the newest date)",
        strategy="alphabetical",
        allow=r"regexp:^release-\d{8}$",
    ),
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
        for tag, days in WORKER_TAGS:
            created = START + timedelta(days=days)
            await pusher.push_image(WORKER_REPO, tag, created=created, labels={"demo.tag": tag})


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
            explained = await run_test_explained(opts, log)
        except TestFailed as err:
            click.echo(f"error: {err}")
            failures += 1
            continue
        print_explain(explained)
        selection = explained.selection
        if selection.chosen is None:
            click.echo(f"-> no tag: {selection.summary}")
        else:
            digest = selection.chosen.digest if scenario.strategy == "digest" else ""
            chosen = f"{selection.chosen.name}@{digest}" if digest else selection.chosen.name
            click.echo(f"-> latest image according to constraint is {image}:{chosen}")
    return failures


STAGING_APP = """\
# The staging Application: its image tag lives in the Application itself.
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop-staging
spec:
  project: default
  source:
    repoURL: {deploy}
    targetRevision: main
    path: envs/staging
    kustomize:
      images:
      - {image}:1.0.0  # set by argocd-image-updater
  destination:
    server: https://kubernetes.default.svc
    namespace: shop-staging
"""

PROD_APP = """\
# The production Application: its image tag lives in envs/prod/kustomization.yaml.
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop-prod
spec:
  project: default
  source:
    repoURL: {deploy}
    targetRevision: main
    path: envs/prod
  destination:
    server: https://kubernetes.default.svc
    namespace: shop-prod
"""

IMAGE_UPDATER = """\
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata:
  name: shop
spec:
  applicationRefs:
  - namePattern: shop-staging
    images:
    - alias: web
      imageName: {image}:~1.0
  - namePattern: shop-prod
    images:
    - alias: web
      imageName: {image}:~1.0
    - alias: worker
      imageName: {worker}:^3.0
      manifestTargets:
        kustomize:
          name: worker  # the name the Deployment uses; the kustomization maps it
    writeBackConfig:
      method: git
      gitConfig:
        writeBackTarget: kustomization
"""

KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
images:
- name: {image}
  newTag: 1.0.0  # set by argocd-image-updater
- name: worker
  newName: {worker}
  newTag: 2.1.0  # set by argocd-image-updater
"""


def _print_plan(result: CycleResult) -> None:
    for app in result.apps:
        for image in app.plan.results if app.plan else ():
            current = image.current or "(not set)"
            line = f"  {app.app:<20} {image.alias:<7} {current} -> {image.chosen or '-'}"
            why = f" ({image.reason})" if image.reason != image.outcome else ""
            click.echo(f"{line}\n    {image.outcome}{why}: {image.message}")
        if app.error:
            click.echo(f"  {app.app}: error: {app.error}")


async def full_cycle(image: str, conf: Path, tmp: Path) -> int:
    """Part 2: one update cycle in local mode: the Applications and the ImageUpdater are
    manifests in a Git checkout; one Application is updated in its manifest (``argocd``
    write-back, committed in the checkout), the other through a commit to its Git repository."""
    from argocd_image_updater.cli.run_cmd import build_controller, close_resource
    from argocd_image_updater.config.settings import resolve
    from argocd_image_updater_testing.git_servers import bare_repo, git, show

    worker = image.rsplit("/", 2)[0] + "/" + WORKER_REPO
    home = tmp / "git-home"
    home.mkdir(exist_ok=True)
    deploy = bare_repo(
        tmp / "deploy.git",
        files={
            "envs/staging/kustomization.yaml": "resources:\n- deployment.yaml\n",
            "envs/prod/kustomization.yaml": KUSTOMIZATION.format(image=image, worker=worker),
        },
    )
    gitops = tmp / "gitops"
    gitops.mkdir()
    files = {
        "apps/shop-staging.yaml": STAGING_APP.format(image=image, deploy=f"file://{deploy}"),
        "apps/shop-prod.yaml": PROD_APP.format(deploy=f"file://{deploy}"),
        "apps/image-updater.yaml": IMAGE_UPDATER.format(image=image, worker=worker),
    }
    git("init", "-q", "--initial-branch=main", cwd=gitops, home=home)
    for name, text in files.items():
        (gitops / name).parent.mkdir(parents=True, exist_ok=True)
        (gitops / name).write_text(text)
    git("add", "-A", cwd=gitops, home=home)
    git("commit", "-q", "-m", "Add the shop applications", cwd=gitops, home=home)

    click.echo(
        "\n=== A full update cycle in local mode\n"
        f"$ argocd-image-updater run --once --applications-api local --local-path {gitops}\n"
        f"{gitops} (a Git checkout of the app-of-apps repository) holds:\n"
        "  apps/shop-staging.yaml   Application, image tag in the Application (write-back: argocd)\n"
        "  apps/shop-prod.yaml      Application, image tag in envs/prod/kustomization.yaml of\n"
        f"                           {deploy} (write-back: git)\n"
        "  apps/image-updater.yaml  ImageUpdater 'shop': demo/web ~1.0 on both, demo/worker ^3.0\n"
        "                           on prod (no 3.x worker release exists yet)"
    )
    settings = resolve(
        "run",
        {
            "applications_api": "local",
            "local_path": str(gitops),
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
    click.echo("\nPlan (current -> chosen, outcome: reason):")
    _print_plan(result)
    click.echo(
        f"\napplications={len(result.apps)} images_updated={result.images_updated} "
        f"errors={result.errors} registry scans={result.scans}"
    )
    click.echo("\nCommitted in the checkout (argocd write-back edits the Application manifest):")
    click.echo(git("show", "--format=%h %s", "HEAD", cwd=gitops, home=home).rstrip())
    click.echo(f"\nPushed to {deploy} (git write-back):")
    click.echo(git("--git-dir", str(deploy), "show", "--format=%h %s", "main", home=home).rstrip())
    prod = show(deploy, "main", "envs/prod/kustomization.yaml", home=home) or ""
    ok = result.errors == 0 and result.images_updated == 2 and "newTag: 1.0.1" in prod
    return 0 if ok else 1


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
                f"Started a local registry at {registry.url}; pushing sample tags of {REPO} "
                f"and {WORKER_REPO} ..."
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
