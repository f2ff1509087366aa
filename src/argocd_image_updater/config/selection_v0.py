"""The annotation-only selection of the v0.x releases (``--legacy-annotations`` and Applications
no ImageUpdater selects): which annotated Applications are updated, and how."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from argocd_image_updater.config import annotations as ann
from argocd_image_updater.config.chart_annotations import config_from_chart_list_v0, has_chart_list
from argocd_image_updater.config.labels import (
    PatternError,
    SelectorError,
    check_pattern,
    go_path_match,
)
from argocd_image_updater.config.selection import SelectionResult, unsupported_reason
from argocd_image_updater.model.application import Application, SourceType, forced_source_type


def _legacy_label_matches(app: Application, label: str) -> bool:
    key, sep, value = label.partition("=")
    if not sep or "=" in value:
        raise SelectorError(f"labels should have key=value, but instead got: {label}")
    return app.labels.get(key) == value


def select_applications_v0(
    apps: Sequence[Application], name_patterns: Sequence[str] = (), label: str = ""
) -> SelectionResult:
    """The annotation-only selection of the v0.x releases.

    Apps need the ``image-list`` annotation and a Helm or Kustomize source (a
    ``write-back-target: kustomization…`` annotation forces Kustomize). ``name_patterns`` (any
    match; invalid patterns are warned about and ignored) and ``label`` (``key=value``) filter.
    """
    result = SelectionResult()
    for pattern in name_patterns:
        try:
            check_pattern(pattern)
        except PatternError as exc:
            result.warnings.append(f"Invalid application name pattern '{pattern}': {exc}")
    valid = [p for p in name_patterns if _valid(p)]
    for app in apps:
        charts = has_chart_list(app)
        if not ann.is_annotated(app) and not charts:
            continue
        target = app.annotations.get(ann.WRITE_BACK_TARGET_KEY, "")
        forced = target if forced_source_type(target) is SourceType.KUSTOMIZE else None
        source_type = app.source_type(forced)
        if source_type not in (SourceType.HELM, SourceType.KUSTOMIZE) and not charts:
            reason = unsupported_reason(app, source_type)
            result.warnings.append(reason)
            result.skipped.append((app.qualified_name, reason))
            continue
        if name_patterns and not any(go_path_match(p, app.name) for p in valid):
            continue
        if label:
            try:
                if not _legacy_label_matches(app, label):
                    continue
            except SelectorError as exc:
                result.warnings.append(f"Unable match app labels against {label}: {exc}")
                continue
        try:
            if charts:
                config, warnings = config_from_chart_list_v0(app)
                if source_type not in (SourceType.HELM, SourceType.KUSTOMIZE):
                    config = dataclasses.replace(config, images=())
            else:
                config, warnings = ann.config_from_annotations_v0(app)
        except ann.AnnotationError as exc:
            result.warnings.append(str(exc))
            result.skipped.append((app.qualified_name, str(exc)))
            continue
        except Exception as exc:  # one application never stops the others
            reason = (
                f"Could not read the annotations of app {app.qualified_name}, skipping: "
                f"{type(exc).__name__}: {exc}"
            )
            result.warnings.append(reason)
            result.skipped.append((app.qualified_name, reason))
            continue
        result.warnings.extend(warnings)
        result.configs.append(config)
    return result


def _valid(pattern: str) -> bool:
    try:
        check_pattern(pattern)
    except PatternError:
        return False
    return True
