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
  the one the hold is for;
* ``TAG@DIGEST`` pins the tag (the cycle asks the registry for its digest, as for
  ``pinDigest``) and expects that digest: a tag that points elsewhere by then is the image's
  error, and nothing is written.

``ALIAS=DIGEST`` names no tag: :func:`search_order` is the order in which the listed tags are
asked for their digest (:mod:`~argocd_image_updater.controller.set_digest`), the first with
that digest is written.

Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from argocd_image_updater.model.holds import HOLD_ANNOTATION, HOLD_REASON_ANNOTATION
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.pipeline.records import Collected, CRState
from argocd_image_updater.policy.select import Policy, PolicyError, TagVerdict, choose

SET_STRATEGY: Final = "alphabetical"
"""The strategy of the one-tag policy (with one allowed tag, any strategy chooses it)."""
_TAG: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
"""A tag as the OCI distribution specification allows it."""
_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")
"""A manifest digest as registries give it."""


class SetError(Exception):
    """What ``set`` was asked cannot be done (the message says why)."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """``--image``: the image's alias, and the tag to write, its digest, or both."""

    alias: str
    tag: str = ""
    digest: str = ""

    @property
    def version(self) -> str:
        """As given: ``TAG``, ``TAG@DIGEST`` or ``DIGEST``."""
        if self.tag and self.digest:
            return f"{self.tag}@{self.digest}"
        return self.tag or self.digest


def parse_assignment(text: str) -> Assignment:
    """``ALIAS=TAG``, ``ALIAS=TAG@DIGEST`` or ``ALIAS=DIGEST``; :class:`SetError` naming
    ``--image`` when malformed."""
    alias, sep, value = (part.strip() for part in text.partition("="))
    if not sep or not alias or not value:
        raise SetError(
            f"--image {text!r}: expected ALIAS=TAG, ALIAS=TAG@DIGEST or ALIAS=DIGEST "
            "(e.g. web=1.4.2)"
        )
    tag, at, digest = value.partition("@")
    if not at and value.startswith("sha256:"):
        tag, digest = "", value
    if at and not tag:
        raise SetError(f"--image {text!r}: give TAG@DIGEST, or the digest alone")
    if (at or not tag) and not _DIGEST.fullmatch(digest):
        raise SetError(
            f"--image {text!r}: '{digest}' is not a digest: expected sha256: and 64 lowercase "
            "hexadecimal digits"
        )
    if tag and not _TAG.fullmatch(tag):
        raise SetError(f"--image {text!r}: '{tag}' is not a valid tag")
    return Assignment(alias, tag, digest)


def search_order(
    policy: Policy, tags: Sequence[TagInfo], order_hint: Mapping[str, int] | None
) -> list[str]:
    """The names of ``tags`` in the order ``ALIAS=DIGEST`` asks for their digests, the first
    with the digest being written: the tags the image's policy accepts (``allowTags``,
    ``ignoreTags``, its constraint and platforms; not ``minAge``), then the others; each group
    best first by the image's strategy (highest version, newest build, last name). For the
    ``digest`` strategy the followed tag comes first."""
    strategy = policy.strategy
    accepted = set(strategy.only_tags(policy.constraint))
    if not accepted:
        try:
            selection = choose(policy, tags, order_hint)
        except PolicyError:  # an unusable constraint accepts nothing: strategy order alone
            selection = None
        kept = (TagVerdict.CHOSEN, TagVerdict.OLDER)
        verdicts = selection.verdicts if selection is not None else ()
        accepted = {v.tag for v in verdicts if v.reason in kept}
    by_name = {tag.name: tag for tag in tags}

    def key(name: str) -> tuple[bool, tuple[Any, ...]]:
        ranked = strategy.explain_key(by_name[name], name, policy.platforms, order_hint)
        return name in accepted, ranked

    return sorted(by_name, key=key, reverse=True)


def _one_tag(spec: ImageSpec, tag: str, digest: str) -> ImageSpec:
    """``spec`` with a policy that chooses ``tag`` and nothing else (pinned to ``digest``)."""
    # a digest-following image keeps being written with its digest
    follows = (spec.settings.strategy or "").strip().lower() == "digest"
    settings = dataclasses.replace(
        spec.settings,
        strategy=SET_STRATEGY,
        allow_tags=f"regexp:^{re.escape(tag)}$",
        ignore_tags=(),
        allow_downgrade=True,
        min_age=None,
        min_age_from=None,
        pin_digest=True if digest or follows else spec.settings.pin_digest,
    )
    image = ImageRef.parse(spec.image)
    return dataclasses.replace(
        spec, image=image.with_tag(None).full_name, settings=settings, expected_digest=digest
    )


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


def selected_image(
    collected: Collected, namespace: str, name: str, alias: str
) -> tuple[AppUpdateConfig, CRState | None, ImageSpec]:
    """The Application's configuration and the image ``alias`` of it; :class:`SetError` when
    the Application is not selected or has no such image."""
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
    return config, cr, specs[0]


def set_selection(
    collected: Collected, namespace: str, name: str, alias: str, tag: str, digest: str = ""
) -> Collected:
    """The selection of the ``set`` cycle (see the module docs): ``tag`` written, pinned to
    ``digest`` when given; :class:`SetError` as :func:`selected_image`."""
    config, cr, spec = selected_image(collected, namespace, name, alias)
    config = dataclasses.replace(
        _unheld_app(config),
        images=(_one_tag(spec, tag, digest),),
        charts=(),
        skipped_images=(),
        skipped_charts=(),
    )
    cr = _unheld_cr(cr)
    return Collected(
        configs=[(config, cr)], crs=[cr] if cr is not None else [], listed={f"{namespace}/{name}"}
    )
