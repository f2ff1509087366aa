"""``chartfile:<path>``: the version of a dependency in an umbrella chart's ``Chart.yaml``.

``chartfile:Chart.yaml`` names a file below the source path, ``chartfile:/charts/app/Chart.yaml``
one from the repository root (``chartfile`` alone: the source path's ``Chart.yaml``). For every
chart of the Application (``charts[]``) the entry of ``dependencies`` whose ``name`` is the
chart's name (and whose ``repository``, when set, is the chart's repository) gets the new
``version``; only that scalar's bytes change. The current version is read from the same entry
before planning (:func:`chart_versions`), so never-downgrade and the other reasons work as for
images. The file holds chart versions only: an image update with this target is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from argocd_image_updater.kits.yamltext import YamlEditError, set_values
from argocd_image_updater.model.chart import ChartRef, ChartRefError, ChartSpec
from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.plan.charts import CHARTFILE_PREFIX
from argocd_image_updater.plan.model import AppPlan
from argocd_image_updater.writeback.formats.base import (
    FileTarget,
    ImageLookup,
    PathRules,
    TargetError,
    TargetFormat,
    load_yaml,
)

DEFAULT_CHART_FILE: Final = "Chart.yaml"


def _same_repository(declared: Any, ref: ChartRef) -> bool:
    if not isinstance(declared, str) or not declared.strip():
        return True
    text = declared.strip().rstrip("/")
    scheme, sep, rest = text.partition("://")
    if sep:
        host, slash, path = rest.partition("/")
        text = f"{scheme.lower()}://{host.lower()}{slash}{path}"
    return text == ref.repository_url


def dependency_index(data: Any, ref: ChartRef) -> int | None:
    """The position in ``dependencies`` of the entry for ``ref``; ``None`` when there is none."""
    if not isinstance(data, Mapping) or not isinstance(data.get("dependencies"), list):
        return None
    for i, entry in enumerate(data["dependencies"]):
        if not isinstance(entry, Mapping) or entry.get("name") != ref.name:
            continue
        if _same_repository(entry.get("repository"), ref):
            return i
    return None


def chart_versions(text: str | None, charts: Iterable[ChartSpec]) -> dict[str, str]:
    """Chart key → the ``version`` its dependency entry holds (charts without one are absent)."""
    data = load_yaml(text)
    found: dict[str, str] = {}
    for spec in charts:
        try:
            ref = ChartRef.parse(spec.chart)
        except ChartRefError:
            continue  # the planner reports the reference
        index = dependency_index(data, ref)
        if index is None:
            continue
        version = data["dependencies"][index].get("version")
        found[spec.key] = "" if version is None else str(version)
    return found


class ChartFile(TargetFormat):
    name = "chartfile"
    prefix = CHARTFILE_PREFIX
    position = 5

    def parse(
        self, argument: str | None, source_path: str, default_file: str, rules: PathRules
    ) -> FileTarget:
        rel = argument if argument else "./" + DEFAULT_CHART_FILE
        if rel.endswith("/") or rel in ("/", "."):
            raise rules.fail(
                "the target names a directory; name the umbrella chart's Chart.yaml, e.g. "
                "chartfile:Chart.yaml"
            )
        path, key_path = rules.under(source_path, rel)
        if path == ".":
            raise rules.fail("the target names no Chart.yaml")
        return FileTarget(self.name, path, key_path)

    def current_image(self, text: str | None, source: Mapping[str, Any], image: ImageLookup) -> str:
        return ""  # a Chart.yaml holds no image

    def render(
        self, text: str | None, path: str, config: AppUpdateConfig, plan: AppPlan
    ) -> str | None:
        if any(edit.changed for edit in plan.managed):
            raise TargetError(
                f"{path}: writeBackTarget chartfile: holds chart versions only; update the "
                "images of this Application with another write-back target"
            )
        if text is None:
            raise TargetError(f"{path}: no such file in the repository")
        charts = {spec.key: spec for spec in config.charts}
        data = load_yaml(text)
        edits: list[tuple[list[str | int], str]] = []
        for change in plan.changes:
            spec = charts.get(change.alias)
            if spec is None:
                continue
            ref = ChartRef.parse(spec.chart)
            index = dependency_index(data, ref)
            if index is None:
                raise TargetError(
                    f"{path}: no dependency named '{ref.name}' from {ref.repository_url} in "
                    "dependencies"
                )
            if str(data["dependencies"][index].get("version")) != change.new_tag:
                edits.append((["dependencies", index, "version"], change.new_tag))
        if not edits:
            return None
        try:
            return set_values(text, edits, create=False)
        except YamlEditError as err:
            raise TargetError(f"{path}: {err}") from None


FORMAT: Final = ChartFile()
