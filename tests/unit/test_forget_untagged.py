"""The remembered tags a cycle's full tag listings no longer hold are forgotten: once per
repository, from its first scan that listed it in full; nothing else is touched."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.plan_reuse import scan_jobs
from argocd_image_updater.controller.remembered import forget_untagged
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.controller_state import ControllerState
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.pipeline.records import CycleApp
from argocd_image_updater_testing import objects

NOW = datetime(2026, 1, 1, tzinfo=UTC)
HOST = "registry.example.com"


def app(name: str, image: str) -> CycleApp:
    live = objects.application(name, source_type="Helm", images=[f"{image}:1.0"])
    config = AppUpdateConfig(app=Application.from_object(live), images=(ImageSpec("web", image),))
    jobs = scan_jobs(config, RegistryConfig(), None)
    assert not isinstance(jobs, Exception)
    return CycleApp(config, None, jobs)


def listing(*tags: str) -> SimpleNamespace:
    return SimpleNamespace(tags=tuple(SimpleNamespace(name=t) for t in tags))


def test_tags_no_longer_listed_are_forgotten_once_per_repository() -> None:
    state = ControllerState()
    for repo in ("team/a", "team/b", "team/c"):
        state.record_first_seen(f"{HOST}/{repo}", ["1.0", "1.1", "1.2"], NOW)
    a1, a2 = app("a1", f"{HOST}/team/a"), app("a2", f"{HOST}/team/a")
    b, c, d = app("b", f"{HOST}/team/b"), app("c", f"{HOST}/team/c"), app("d", f"{HOST}/team/d")
    scans = {
        a1.jobs.jobs[0].scan_key: listing("1.0", "1.2"),  # 1.1 deleted
        b.jobs.jobs[0].scan_key: RuntimeError("unreachable"),  # failed: nothing forgotten
        d.jobs.jobs[0].scan_key: listing("9.9"),  # nothing remembered of it: left alone
    }  # c not scanned
    forget_untagged(state, [a1, a2, b, c, d], scans)
    assert sorted(state.first_seen_of(f"{HOST}/team/a")) == ["1.0", "1.2"]
    for repo in ("team/b", "team/c"):
        assert sorted(state.first_seen_of(f"{HOST}/{repo}")) == ["1.0", "1.1", "1.2"]
    assert not state.remembers_tags(f"{HOST}/team/d")
