"""``set --image ALIAS=DIGEST``: which tag of the image's repository to write for a digest.

The repository's tags are listed with the image's own registry settings and credentials (the
scan the cycle makes, every tag: for the ``digest`` strategy too), put in
:func:`~argocd_image_updater.controller.set_version.search_order`, and asked for their digest
in that order: a ``HEAD`` per tag, as digest pinning asks (:meth:`Scanner.tag_digest`, so a
multi-arch image answers with its index's digest), in windows of :data:`WINDOW` tags asked at
once, each window twice the last up to :data:`MAX_WINDOW`; the first tag whose digest is the
one asked for is the answer, and no later window is asked. A scan that reads manifests
(``newest-build``) already knows every tag's digest and asks nothing more. So the requests are
at most one per listed tag, and a digest of the tag the image's policy would choose costs one
window of :data:`WINDOW`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Final

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.scan import scan_request
from argocd_image_updater.controller.set_version import SetError, search_order
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.update_config import AppUpdateConfig, ImageSpec
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.plan.jobs import policy_of
from argocd_image_updater.plan.scans import Refusal, registry_access, scan_key_for
from argocd_image_updater.policy.select import PolicyError
from argocd_image_updater.registry.errors import ManifestNotFound
from argocd_image_updater.registry.scanner import Scanner

log = get_logger("set")

WINDOW: Final = 8
"""Tags asked for their digest at once in the first window (the registry's own concurrency
bound applies too)."""
MAX_WINDOW: Final = 32
"""Tags asked at once in the later windows, at most (each window doubles the last)."""


@dataclass(frozen=True, slots=True)
class Found:
    """The tag to write for a digest, and whether the image writes digests (``digest``
    strategy or ``pinDigest``: ``TAG@DIGEST``; else the tag alone)."""

    tag: str
    pins: bool
    asked: int
    """Tags asked for their digest (``HEAD`` requests)."""


async def tag_for_digest(
    config: AppUpdateConfig,
    spec: ImageSpec,
    digest: str,
    registries: RegistryConfig,
    scanner: Scanner,
    credentials: CredentialsCache,
) -> Found:
    """The tag of ``spec``'s repository whose manifest digest is ``digest`` (see the module
    docs); :class:`SetError` naming the digest and the repository when none is."""
    try:
        cfg = ImageRef.parse(spec.image)
        policy, _ = policy_of(spec, cfg)
    except (ImageRefError, PolicyError) as err:
        raise SetError(f"image '{spec.key}': {err}") from None
    access = registry_access(config, spec.settings, registries.endpoint_for, cfg.registry, cfg.name)
    if isinstance(access, Refusal):
        raise SetError(f"image '{spec.key}': {access.message}")
    endpoint, repository, pull_secret = access
    where = f"{endpoint.host}/{endpoint.repository_path(repository)}"
    key = scan_key_for(policy, endpoint, repository, pull_secret)
    pins = spec.settings.effective_pin_digest or policy.strategy.pins_digest
    if key.only_tags:  # the digest strategy: every tag is a candidate, none needs metadata
        key = key._replace(metadata=False, platforms=(), only_tags=())
    provider = credentials.for_job(endpoint, pull_secret or None, config.app.namespace)
    try:
        scan = await scanner.scan(scan_request(key, repository, endpoint, provider))
    except Exception as err:  # the registry's answer, named
        raise SetError(f"cannot list the tags of {where}: {err}") from None
    known = {tag.name: tag.digest for tag in scan.tags if tag.digest}
    order = search_order(policy, scan.tags, scan.order_hint)
    asked, start, size = 0, 0, WINDOW
    while start < len(order):
        window = order[start : start + size]
        start, size = start + size, min(size * 2, MAX_WINDOW)
        wanted = [name for name in window if name not in known]
        answers = await asyncio.gather(
            *(scanner.tag_digest(endpoint, repository, name, provider) for name in wanted),
            return_exceptions=True,
        )
        asked += len(wanted)
        for name, answer in zip(wanted, answers, strict=True):
            if isinstance(answer, ManifestNotFound):
                continue  # deleted since it was listed
            if isinstance(answer, BaseException):
                raise SetError(
                    f"cannot read the digest of tag '{name}' of {where}: {answer}"
                ) from None
            known[name] = answer
        match = next((name for name in window if known.get(name) == digest), None)
        if match is not None:
            log.info(
                "tag %s of %s has digest %s", match, where, digest, asked=asked, listed=len(order)
            )
            return Found(match, pins, asked)
    raise SetError(
        f"no tag of {where} points at {digest} ({len(order)} tags listed); a digest no tag "
        "names cannot be set"
    )
