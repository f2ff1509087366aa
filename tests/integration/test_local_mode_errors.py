"""Local mode in CI: every skipped file and invalid object is an error of the run, named with
its file and line; ``run --once`` exits 4 then (``--exit-zero-on-error`` opts out)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from cli_run import CliRun, run_cli
from fleet import registries_conf
from test_local_mode import GIT, KUSTOMIZATION, application, checkout, image_updater

from argocd_image_updater_testing.git_servers import bare_repo, show
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

START = datetime(2026, 3, 1, tzinfo=UTC)

UNCLOSED_QUOTE = (
    "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: broken\n"
    'spec: {project: "default}\n# more\n# lines\n'
)
INVALID_UPDATER = """\
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata:
  name: bad
spec:
  applicationRefs:
  - namePattern: web
    images:
    - alias: web
      imageNmae: {image}
"""


def run_once(tmp_path: Path, registry: RegistryServer, apps: Path, *extra: str) -> CliRun:
    return run_cli(
        "run",
        "--once",
        "--applications-api",
        "local",
        "--local-path",
        str(apps),
        "--registries-conf-path",
        str(registries_conf(tmp_path, registry)),
        "--git-cache-dir",
        str(tmp_path / "clones"),
        "--git-commit-message-path",
        str(tmp_path / "no-template"),
        *extra,
    )


async def test_bad_files_and_objects_are_errors_with_file_and_line(
    tmp_path: Path, registry: RegistryServer, repo: str
) -> None:
    async with ImagePusher(registry.url) as pusher:
        for i, tag in enumerate(["1.0.0", "1.1.0"]):
            await pusher.push_image(repo, tag, created=START + timedelta(days=i))
    image = f"{registry.host}/{repo}"
    home = tmp_path / "home"
    home.mkdir()
    deploy = bare_repo(
        tmp_path / "deploy.git", files={"apps/web/kustomization.yaml": KUSTOMIZATION}
    )
    fields = {"repoURL": f"file://{deploy}", "targetRevision": "main", "path": "apps/web"}
    apps = checkout(
        tmp_path / "apps",
        {
            "web.yaml": application("web", fields),
            "updater.yaml": image_updater("web", "web", image, GIT),
            "broken.yaml": UNCLOSED_QUOTE,
            "team/bad-updater.yaml": INVALID_UPDATER.format(image=image),
        },
        home,
    )

    result = run_once(tmp_path, registry, apps, "--dry-run")
    assert result.returncode == 4, result.output
    assert result.heavy == ()
    out = result.output
    # the good Application is still planned; the summary counts the file and the object
    assert "images_updated=1 errors=2" in out
    assert "broken.yaml: not valid YAML, skipped: line 5, column 17" in out
    line = next(text for text in out.splitlines() if "invalid ImageUpdater" in text)
    # the line of the first problem: the image entry that lacks imageName
    assert "team/bad-updater.yaml:9: invalid ImageUpdater argocd/bad, skipped:" in line
    assert "spec.applicationRefs[0].images[0].imageName: required field is missing" in line
    assert "spec.applicationRefs[0].images[0].imageNmae: unknown field" in line
    assert "fix the file" in line
    assert line.count("invalid ImageUpdater") == 1 and "apply it again" not in line
    assert "exiting with code 4: errors=2 (--exit-zero-on-error exits 0)" in out

    opted_out = run_once(tmp_path, registry, apps, "--exit-zero-on-error")
    assert opted_out.returncode == 0, opted_out.output
    assert "errors=2" in opted_out.output
    assert show(deploy, "main", "apps/web/.argocd-source-web.yaml", home=home) is not None


async def test_a_clean_run_exits_zero(tmp_path: Path, registry: RegistryServer, repo: str) -> None:
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=START)
    image = f"{registry.host}/{repo}"
    home = tmp_path / "home"
    home.mkdir()
    deploy = bare_repo(
        tmp_path / "deploy.git", files={"apps/web/kustomization.yaml": KUSTOMIZATION}
    )
    fields = {"repoURL": f"file://{deploy}", "targetRevision": "main", "path": "apps/web"}
    apps = checkout(
        tmp_path / "apps",
        {"web.yaml": application("web", fields), "u.yaml": image_updater("w", "web", image, GIT)},
        home,
    )
    result = run_once(tmp_path, registry, apps)
    assert result.returncode == 0, result.output
    assert "errors=0" in result.output
