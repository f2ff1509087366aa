"""A one-image update plan for tests of what is written from a plan (JSON patch, YAML edits)."""

from __future__ import annotations

from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.plan.model import (
    AppPlan,
    ImageChange,
    ImageResult,
    Outcome,
    ParamEdit,
    SourcePath,
)


def make_plan(edits: list[ParamEdit], path: SourcePath = ("spec", "source")) -> AppPlan:
    change = ImageChange(
        alias="a",
        image=ImageRef.parse("a/b:~1"),
        old_tag="1.0",
        new_tag="1.1",
        new_digest="",
        edits=tuple(e for e in edits if e.changed),
    )
    result = ImageResult("a", "a/b:~1", "a/b:1.0", "a/b:1.1", Outcome.UPDATED, "updated", "")
    return AppPlan.build(
        app_name="app",
        app_namespace="ns",
        source_path=path,
        source_type="Helm",
        results=[result],
        changes=[change],
        managed=edits,
    )
