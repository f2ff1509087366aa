"""What one ``applicationRef`` of an ImageUpdater configures, merged over the spec: its settings,
images, charts, write-back configuration and verification policy (used by the selection), each
value knowing the field it comes from."""

from __future__ import annotations

from argocd_image_updater.config.imageupdater import (
    ApplicationRef,
    ImageUpdater,
    settings_of,
    verification_of,
)
from argocd_image_updater.config.imageupdater_writeback import write_back_layer
from argocd_image_updater.model import update_config as uc
from argocd_image_updater.model.chart import ChartSpec


def ref_settings(cr: ImageUpdater, ref: ApplicationRef) -> uc.UpdateSettings:
    """The spec-level settings merged with the ref's, each value knowing its field."""
    return uc.UpdateSettings.merge(
        settings_of(cr.spec.common_update_settings, cr.field("spec.commonUpdateSettings")),
        settings_of(
            ref.common_update_settings, cr.field(f"{cr.ref_path(ref)}.commonUpdateSettings")
        ),
    )


def image_specs(
    cr: ImageUpdater,
    ref: ApplicationRef,
    settings: uc.UpdateSettings,
    verification: uc.Verification | None,
) -> list[uc.ImageSpec]:
    """The images of ``ref`` with their settings merged over ``settings``."""
    base = cr.ref_path(ref)
    return [
        image.to_spec(settings, verification, cr.field(f"{base}.images[{i}]"))
        for i, image in enumerate(ref.images or ())
    ]


def chart_specs(
    cr: ImageUpdater, ref: ApplicationRef, settings: uc.UpdateSettings
) -> list[ChartSpec]:
    """The charts of ``ref`` with their settings merged over ``settings``."""
    base = cr.ref_path(ref)
    return [
        chart.to_spec(settings, cr.field(f"{base}.charts[{i}]"))
        for i, chart in enumerate(ref.charts or ())
    ]


def ref_write_back(cr: ImageUpdater, ref: ApplicationRef) -> uc.WriteBack:
    """The spec-level write-back configuration merged with the ref's."""
    return uc.WriteBack.from_layers(
        write_back_layer(cr.spec.write_back_config), write_back_layer(ref.write_back_config)
    )


def ref_verification(
    cr: ImageUpdater, ref: ApplicationRef, *, include_spec: bool = True
) -> uc.Verification | None:
    """The ref-level verification policy (merged over the spec's unless ``include_spec=False``)."""
    spec_level = verification_of(cr.spec.images_verification) if include_spec else None
    return uc.Verification.merge(spec_level, verification_of(ref.images_verification))
