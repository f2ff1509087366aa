"""The ``argocd-image-updater.argoproj.io/chart-list`` annotation: charts of legacy annotations.

The same syntax as ``image-list`` — ``[<alias>=]<chart>[:<constraint>]``, comma-separated, where
``<chart>`` is ``oci://…`` or ``https://…/<name>`` (see :mod:`argocd_image_updater.model.chart`)
— and the same per-alias settings keys (``<alias>.update-strategy``, ``<alias>.allow-tags``,
``<alias>.ignore-tags``, ``<alias>.pull-secret``, ``<alias>.allow-downgrade``, …), read the way
the image list of the same mode reads them: :func:`read_chart_list` for an ImageUpdater ref with
``useAnnotations: true``, :func:`read_chart_list_v0` for the annotation-only (v0.x) mode.
Nothing here logs; warnings are returned to the caller.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from argocd_image_updater.config import annotations as ann
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.imagelist import split_entries
from argocd_image_updater.model.update_config import (
    LEGACY_ORIGIN,
    AppUpdateConfig,
    UpdateSettings,
    WriteBack,
    WriteBackError,
)

CHART_LIST_KEY: Final = f"{ann.PREFIX}/chart-list"
_ENTRY_FORMAT: Final = "[<alias>=]<oci://… or https://… chart>[:<constraint>]"


def has_chart_list(app: Application) -> bool:
    """Whether the app carries the ``chart-list`` annotation (any value)."""
    return CHART_LIST_KEY in app.annotations


def _entries(app: Application) -> list[tuple[str, str]]:
    value = app.annotations.get(CHART_LIST_KEY)
    if value is None:
        return []
    out: list[tuple[str, str]] = []
    for item, alias, chart in split_entries(value):
        if not chart:
            raise ann.AnnotationError(
                f"empty chart in {CHART_LIST_KEY} entry '{item}' on app "
                f"{app.namespace}/{app.name}: write {_ENTRY_FORMAT}"
            )
        out.append((alias, chart))
    if not out:
        raise ann.AnnotationError(
            f"annotation {CHART_LIST_KEY} on app {app.namespace}/{app.name} names no chart: "
            f"give a comma-separated list of {_ENTRY_FORMAT}"
        )
    return out


def read_chart_list(app: Application) -> tuple[ChartSpec, ...]:
    """The charts of ``chart-list`` with their settings (application-wide keys, then the
    alias's), as a ``useAnnotations`` ref reads them; :class:`AnnotationError` naming the key."""
    base = ann.read_update_settings(app) or UpdateSettings()
    origin = ann.annotation_field(app, CHART_LIST_KEY)
    charts: list[ChartSpec] = []
    for alias, chart in _entries(app):
        settings = base
        if alias:
            try:
                settings = base.merged(ann.read_update_settings(app, alias))
            except ann.AnnotationError as exc:
                raise ann.AnnotationError(
                    f"parse common update settings for alias {alias!r}: {exc}"
                ) from None
        charts.append(ChartSpec(alias, chart, settings, origin))
    return tuple(charts)


def read_chart_list_v0(app: Application, warnings: list[str]) -> tuple[ChartSpec, ...]:
    """The charts of ``chart-list`` as the annotation-only (v0.x) mode reads its images."""
    origin = ann.annotation_field(app, CHART_LIST_KEY)
    return tuple(
        ChartSpec(alias, chart, ann.settings_v0(app, alias, warnings), origin)
        for alias, chart in _entries(app)
    )


def config_from_chart_list_v0(app: Application) -> tuple[AppUpdateConfig, list[str]]:
    """An annotation-only application that manages charts: its charts and write-back, and the
    images of ``image-list`` when it has one too."""
    warnings: list[str] = []
    if ann.is_annotated(app):
        config, warnings = ann.config_from_annotations_v0(app)
    else:
        write_back = WriteBack.from_layers(ann.read_write_back(app))
        try:
            write_back.check(qualified_secret=True)
        except WriteBackError as exc:
            raise ann.AnnotationError(
                f"invalid write-back annotations on app {app.namespace}/{app.name}: {exc}"
            ) from None
        config = AppUpdateConfig(app=app, images=(), write_back=write_back, origin=LEGACY_ORIGIN)
    return replace(config, charts=read_chart_list_v0(app, warnings)), warnings
