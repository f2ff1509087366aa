"""Chart versions written to git: ``writeBackTarget: chartfile:<path>`` edits an umbrella chart's
``Chart.yaml`` in a real git repository (controller, Kubernetes API fake), and local mode edits
the Application manifest of a chart source in place and commits it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.plan.model import ImageReason
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.git_servers import bare_repo, git, log_subjects, show
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "argocd"
START = datetime(2026, 5, 1, tzinfo=UTC)

UMBRELLA = """\
apiVersion: v2
name: platform   # umbrella chart
version: 0.1.0
dependencies:
  - name: redis
    version: "17.0.0"          # pinned on purpose
    repository: https://charts.example.com/stable
  - name: web
    version: 1.0.0  # bumped by the updater
    repository: oci://{host}/{repo}
    condition: web.enabled
"""


@pytest.fixture
async def kube() -> AsyncIterator[KubeApiServer]:
    async with KubeApiServer(namespaces=(NS,)) as server:
        yield server


async def push_charts(registry: RegistryServer, repo: str, versions: list[str]) -> None:
    async with ImagePusher(registry.url) as pusher:
        for i, version in enumerate(versions):
            await pusher.push_chart(f"{repo}/web", version, created=START + timedelta(days=i))


async def cycles(settings: dict[str, Any], count: int) -> list[Any]:
    controller, closers = await build_controller(resolve("run", settings, env={}))
    try:
        return [await controller.cycle() for _ in range(count)]
    finally:
        for closer in reversed(closers):
            await close_resource(closer)


def cr_with(target: str, chart: str) -> dict[str, Any]:
    return {
        "writeBackConfig": {"method": "git", "gitConfig": {"writeBackTarget": target}},
        "applicationRefs": [
            {"namePattern": "platform", "charts": [{"alias": "web", "chart": chart}]}
        ],
    }


async def test_chartfile_bumps_the_dependency_version_byte_exactly(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, home: Path
) -> None:
    await push_charts(registry, repo, ["1.0.0", "1.1.0", "1.2.0", "2.0.0"])
    host = registry.host
    chart_yaml = UMBRELLA.format(host=host, repo=repo)
    remote = bare_repo(tmp_path / "platform.git", files={"charts/platform/Chart.yaml": chart_yaml})
    kube.store.put(
        objects.application(
            "platform",
            NS,
            source_type="Helm",
            repo_url=f"file://{remote}",
            path="charts/platform",
            target_revision="main",
        )
    )
    kube.store.put(
        objects.image_updater(
            "platform", NS, cr_with("chartfile:Chart.yaml", f"oci://{host}/{repo}/web:^1")
        )
    )
    settings = {
        "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
        "registries_conf_path": str(registries_conf(tmp_path, registry)),
        "git_cache_dir": str(tmp_path / "clones"),
        "git_commit_message_path": str(tmp_path / "no-template"),
        "once": True,
    }

    first, second = await cycles(settings, 2)

    assert first.errors == 0 and first.images_updated == 1
    text = show(remote, "main", "charts/platform/Chart.yaml", home=home)
    assert text == chart_yaml.replace("version: 1.0.0  #", "version: 1.2.0  #")
    assert len(log_subjects(remote, "main", home=home)) == 2
    assert kube.request_count("patch", "applications") == 0
    # The next cycle reads 1.2.0 from the file: up to date, no commit.
    assert second.images_updated == 0 and second.errors == 0
    (result,) = second.apps[0].plan.results
    assert result.reason == ImageReason.UP_TO_DATE
    assert len(log_subjects(remote, "main", home=home)) == 2


async def test_chartfile_from_the_repository_root_and_never_downgrade(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path, home: Path
) -> None:
    await push_charts(registry, repo, ["0.9.0"])
    host = registry.host
    chart_yaml = UMBRELLA.format(host=host, repo=repo)
    remote = bare_repo(tmp_path / "platform.git", files={"umbrella/Chart.yaml": chart_yaml})
    kube.store.put(
        objects.application(
            "platform",
            NS,
            source_type="Helm",
            repo_url=f"file://{remote}",
            path="somewhere/else",
            target_revision="main",
        )
    )
    kube.store.put(
        objects.image_updater(
            "platform", NS, cr_with("chartfile:/umbrella/Chart.yaml", f"oci://{host}/{repo}/web")
        )
    )
    settings = {
        "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
        "registries_conf_path": str(registries_conf(tmp_path, registry)),
        "git_cache_dir": str(tmp_path / "clones"),
        "once": True,
    }
    (result,) = await cycles(settings, 1)
    (chart,) = result.apps[0].plan.results
    assert chart.reason == ImageReason.WOULD_DOWNGRADE
    assert chart.current == f"oci://{host}/{repo}/web:1.0.0"
    assert show(remote, "main", "umbrella/Chart.yaml", home=home) == chart_yaml


async def test_other_git_targets_refuse_charts(
    kube: KubeApiServer, registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    await push_charts(registry, repo, ["1.0.0", "1.1.0"])
    host = registry.host
    kube.store.put(
        objects.application(
            "platform",
            NS,
            source_type="Helm",
            repo_url=f"{host}/{repo}",
            chart="web",
            target_revision="1.0.0",
        )
    )
    kube.store.put(
        objects.image_updater("platform", NS, cr_with("helmvalues", f"oci://{host}/{repo}/web"))
    )
    settings = {
        "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
        "registries_conf_path": str(registries_conf(tmp_path, registry)),
        "git_cache_dir": str(tmp_path / "clones"),
        "once": True,
    }
    (result,) = await cycles(settings, 1)
    (chart,) = result.apps[0].plan.results
    assert chart.reason == ImageReason.INVALID_CONFIG
    assert "chartfile:<path to Chart.yaml>" in chart.message
    assert result.errors == 1


LOCAL_APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web   # the web chart
spec:
  project: default
  source:
    repoURL: {host}/{repo}
    chart: web
    targetRevision: "1.0.0"    # keep this comment
    helm:
      releaseName: web
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"""

LOCAL_CR = """\
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata:
  name: web
spec:
  applicationRefs:
  - namePattern: web
    charts:
    - alias: web
      chart: oci://{host}/{repo}/web:~1.0
"""


async def test_local_mode_edits_the_application_manifest_and_commits(
    registry: RegistryServer, repo: str, tmp_path: Path, home: Path
) -> None:
    await push_charts(registry, repo, ["1.0.0", "1.0.3", "1.1.0"])
    apps = tmp_path / "apps"
    apps.mkdir()
    app_text = LOCAL_APP.format(host=registry.host, repo=repo)
    (apps / "web.yaml").write_text(app_text)
    (apps / "updater.yaml").write_text(LOCAL_CR.format(host=registry.host, repo=repo))
    git("init", "-q", "--initial-branch=main", cwd=apps, home=home)
    git("add", "-A", cwd=apps, home=home)
    git("commit", "-q", "-m", "apps", cwd=apps, home=home)
    settings = {
        "applications_api": "local",
        "local_path": str(apps),
        "registries_conf_path": str(registries_conf(tmp_path, registry)),
        "git_cache_dir": str(tmp_path / "clones"),
        "git_commit_message_path": str(tmp_path / "no-template"),
        "once": True,
    }
    first, second = await cycles(settings, 2)
    assert first.errors == 0 and first.images_updated == 1
    assert (apps / "web.yaml").read_text() == app_text.replace('"1.0.0"', '"1.0.3"')
    assert len(log_subjects(apps / ".git", "main", home=home)) == 2
    assert second.images_updated == 0
    assert len(log_subjects(apps / ".git", "main", home=home)) == 2
