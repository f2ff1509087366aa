"""The ``set`` command's cycle: one image of one Application written at a chosen version.

``set`` writes through the cycle's own stages (scan → choose → plan → verify → write), so the
version goes out by the Application's write-back method (``argocd``, a commit, a pull request;
local mode: the files) and is verified when the image's verification is enabled. What differs
is the selection the cycle is given (:func:`set_selection`):

* only the Application and the image asked for are planned (its other images and charts are
  left as they are);
* the image's tag policy is replaced by one that allows exactly the chosen tag (``allowTags``
  ``regexp:^<tag>$``, strategy ``alphabetical``, downgrades allowed, no ``minAge``), so the
  registry must still list the tag, and the strategy is bypassed;
* the manual holds of the Application are not read for this one write: ``set`` puts its own
  hold on the image before it writes (so that no cycle moves it meanwhile), and this write is
  the one the hold is for.

Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Final

from argocd_image_updater.model.holds import HOLD_ANNOTATION, HOLD_REASON_ANNOTATION
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.pipeline.records import Collected, CRState

SET_STRATEGY: Final = "alphabetical"
"""The strategy of the one-tag policy (with one allowed tag, any strategy chooses it)."""
_TAG: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
"""A tag as the OCI distribution specification allows it."""


class SetError(Exception):
    """What ``set`` was asked cannot be done (the message says why)."""


def parse_assignment(text: str) -> tuple[str, str]:
    """``ALIAS=TAG`` → (alias, tag); :class:`SetError` naming ``--image`` when malformed."""
    alias, sep, value = (part.strip() for part in text.partition("="))
    if not sep or not alias or not value:
        raise SetError(f"--image {text!r}: expected ALIAS=TAG (e.g. web=1.4.2)")
    if value.startswith("sha256:") or "@" in value:
        raise SetError(
            f"--image {text!r}: give the tag to set; a digest alone names no tag to write "
            "(with pinDigest or the digest strategy the tag is written with its digest)"
        )
    if not _TAG.fullmatch(value):
        raise SetError(f"--image {text!r}: '{value}' is not a valid tag") from None
    return alias, value


def _one_tag(spec: ImageSpec, tag: str) -> ImageSpec:
    """``spec`` with a policy that chooses ``tag`` and nothing else."""
    settings = dataclasses.replace(
        spec.settings,
        strategy=SET_STRATEGY,
        allow_tags=f"regexp:^{re.escape(tag)}$",
        ignore_tags=(),
        allow_downgrade=True,
        min_age=None,
        min_age_from=None,
        # a digest-following image keeps being written with its digest
        pin_digest=True if spec.settings.strategy == "digest" else spec.settings.pin_digest,
    )
    image = ImageRef.parse(spec.image)
    return dataclasses.replace(spec, image=image.with_tag(None).full_name, settings=settings)


def _unheld_app(config: AppUpdateConfig) -> AppUpdateConfig:
    app = config.app
    annotations = {
        k: v
        for k, v in app.annotations.items()
        if k not in (HOLD_ANNOTATION, HOLD_REASON_ANNOTATION)
    }
    if len(annotations) == len(app.annotations):
        return config
    return dataclasses.replace(config, app=dataclasses.replace(app, annotations=annotations))


def _unheld_cr(cr: CRState | None) -> CRState | None:
    if cr is None:
        return None
    spec: Any = cr.raw.get("spec")
    if not isinstance(spec, Mapping) or "holds" not in spec:
        return cr
    raw = {**cr.raw, "spec": {k: v for k, v in spec.items() if k != "holds"}}
    return dataclasses.replace(cr, raw=raw)


def set_selection(
    collected: Collected, namespace: str, name: str, alias: str, tag: str
) -> Collected:
    """The selection of the ``set`` cycle (see the module docs); :class:`SetError` when the
    Application is not selected or has no image ``alias``."""
    where = f"Application {namespace}/{name}"
    found = [
        (config, cr)
        for config, cr in collected.configs
        if (config.app.namespace, config.app.name) == (namespace, name)
    ]
    if not found:
        problems = "; ".join(p for p in collected.problems if name in p)
        raise SetError(
            f"{where} is not selected for image updates (no ImageUpdater selects it and it "
            "has no image-list annotation)" + (f": {problems}" if problems else "")
        )
    config, cr = found[0]
    specs = [spec for spec in config.images if spec.alias == alias]
    if not specs:
        known = ", ".join(spec.alias for spec in config.images if spec.alias) or "none"
        raise SetError(f"{where} has no image with alias '{alias}' (aliases: {known})")
    config = dataclasses.replace(
        _unheld_app(config),
        images=(_one_tag(specs[0], tag),),
        charts=(),
        skipped_images=(),
        skipped_charts=(),
    )
    cr = _unheld_cr(cr)
    return Collected(
        configs=[(config, cr)], crs=[cr] if cr is not None else [], listed={f"{namespace}/{name}"}
    )
