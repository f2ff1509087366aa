"""Before planning: the current chart versions of Applications written to ``chartfile:`` targets.

A chart written with ``writeBackTarget: chartfile:<path>`` has its version in the umbrella
chart's ``Chart.yaml`` (``dependencies[name=<chart>].version``), not in the Application. This
step reads those files from the git write-back's cached clones (one checkout per repository and
branch per cycle, a fetch of what moved) and puts the versions into
``AppUpdateConfig.chart_versions``, so that the planner decides as for any chart. A file that
cannot be read leaves the versions unknown: its charts are reported ``not-live`` and the git
writer reports the file's problem when there is something to write.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from argocd_image_updater.model.repo_url import repository_key
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater.plan.charts import is_chartfile_target
from argocd_image_updater.writeback.formats.chartfile import chart_versions
from argocd_image_updater.writeback.git import GitCredentialsResolver, RepoCache
from argocd_image_updater.writeback.targets import GitTarget, resolve_target

log = get_logger("chartfile")


class ChartFileVersions:
    """A ``prepare`` step of the controller (see :class:`~.controller.runner.Controller`)."""

    def __init__(
        self, cache: RepoCache, credentials: GitCredentialsResolver, controller_namespace: str
    ) -> None:
        self._cache = cache
        self._credentials = credentials
        self._namespace = controller_namespace

    async def _read(
        self, wanted: Mapping[int, tuple[AppUpdateConfig, GitTarget]]
    ) -> dict[int, str | None]:
        groups: dict[tuple[str, str, str], list[int]] = {}
        for index, (config, target) in wanted.items():
            ref = config.write_back.git_credentials_ref or "repocreds"
            key = (repository_key(target.repo_url), target.base_branch, ref)
            groups.setdefault(key, []).append(index)
        texts: dict[int, str | None] = {}
        for (_, branch, ref), members in groups.items():
            first_config, first_target = wanted[members[0]]
            url = first_target.repo_url
            try:
                creds = await self._credentials.resolve(ref, url, first_config.app.namespace)
                async with self._cache.checkout(url, creds, branch or "HEAD") as work:
                    for index in members:
                        texts[index] = work.read(wanted[index][1].file_path)
            except Exception as err:  # reported per chart: its version stays unknown
                log.warning(
                    "cannot read the chart file of %d application(s) in %s: %s",
                    len(members),
                    url,
                    str(err),
                )
        return texts

    async def __call__(self, collected: Collected) -> Collected:
        wanted: dict[int, tuple[AppUpdateConfig, GitTarget]] = {}
        for index, (config, _) in enumerate(collected.configs):
            write_back = config.write_back
            if not config.charts or not is_chartfile_target(write_back.write_back_target):
                continue
            try:
                target = resolve_target(config.app, write_back, self._namespace)
            except ValueError:
                continue  # the git writer reports it with the app
            wanted[index] = (config, target)
        if not wanted:
            return collected
        texts = await self._read(wanted)
        configs: list[tuple[AppUpdateConfig, CRState | None]] = []
        for index, (config, cr) in enumerate(collected.configs):
            if index in texts:
                versions = chart_versions(texts[index], config.charts)
                config = dataclasses.replace(config, chart_versions=versions)
            configs.append((config, cr))
        return dataclasses.replace(collected, configs=configs)
