"""The registry scan an image or a chart needs, and whether it may run (pure).

Shared by the scan jobs of images (``plan.jobs``) and of charts (``plan.charts``): the
:class:`ScanKey` (equal keys across all applications of a cycle mean one registry scan), the
endpoint, repository and pull secret a scan uses (:func:`registry_access`, or a
:class:`Refusal` saying why it may not run), the ``minAge`` settings, and the result of an image
or chart the selection left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Final, NamedTuple

from argocd_image_updater.config.credentials import CredentialRefError, parse_credential_ref
from argocd_image_updater.config.durations import DurationError, parse_go_duration
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.update_config import AppUpdateConfig, SkippedImage, UpdateSettings
from argocd_image_updater.plan.model import ImageReason, ImageResult, Outcome
from argocd_image_updater.policy.min_age import FROM_CREATED, FROM_SEEN, MIN_AGE_FROM
from argocd_image_updater.policy.select import Policy, PolicyError, needs_metadata

EndpointFor = Callable[[str, str], RegistryEndpoint]
_SECRET_PREFIXES: Final = ("pullsecret:", "secret:")


class ScanKey(NamedTuple):
    """One registry scan: equal keys across all apps of a cycle are scanned once.

    ``repository`` already carries the endpoint's default namespace. ``credentials`` is the
    image's credential reference, ``""`` for the endpoint's own. ``platforms`` (sorted) only
    matter, and are only set, when ``metadata`` is fetched; ``only_tags`` restricts the scan
    (the followed tag of the ``digest`` strategy), ``()`` means every tag. A named tuple:
    hashed and compared in C, several times per scan a cycle (a dataclass's ``__hash__`` was
    about 4 % of a sharded replica's cycle CPU in ``benchmarks/sharding.py``).
    """

    api_url: str
    repository: str
    credentials: str
    metadata: bool
    platforms: tuple[str, ...]
    only_tags: tuple[str, ...]
    kind: str = ""
    """``""`` for a registry scan; ``helm-index`` for a chart of a Helm repository
    (``api_url`` is then the repository URL, ``repository`` the chart name)."""


def pull_secret_namespace(ref: str) -> str | None:
    """The namespace a ``pullsecret:``/``secret:`` reference names, if it names one."""
    if not ref.startswith(_SECRET_PREFIXES):
        return None
    location = ref.partition(":")[2]
    namespace, sep, _ = location.partition("/")
    return namespace if sep else None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an image or chart cannot be scanned (its result's reason and message)."""

    reason: ImageReason
    message: str


def registry_access(
    config: AppUpdateConfig,
    settings: UpdateSettings,
    endpoint_for: EndpointFor,
    registry: str,
    name: str,
) -> tuple[RegistryEndpoint, str, str] | Refusal:
    """The endpoint, repository path and pull secret (``""`` for none) a scan of ``name`` on
    ``registry`` uses, or why it may not run: a pull secret reference that cannot be read or
    names another namespace than the app's (outside legacy mode), or no endpoint for it."""
    pull_secret = settings.effective_pull_secret
    if pull_secret:
        try:
            parse_credential_ref(pull_secret)
        except CredentialRefError as err:
            where = settings.where("pull_secret")
            return Refusal(ImageReason.INVALID_CONFIG, f"{where}: {err}")
    app = config.app
    namespace = pull_secret_namespace(pull_secret)
    if namespace is not None and namespace != app.namespace and not config.is_legacy:
        return Refusal(
            ImageReason.PULL_SECRET_NAMESPACE,
            f"{settings.where('pull_secret')} namespace '{namespace}' differs from app "
            f"namespace '{app.namespace}'",
        )
    try:
        endpoint = endpoint_for(registry, name)
    except Exception as err:  # a configuration lookup; its failure is this image's error
        return Refusal(
            ImageReason.REGISTRY_CONFIG,
            f"Could not get registry endpoint from configuration: {err}",
        )
    return endpoint, endpoint.repository_path(name), pull_secret or ""


def parse_min_age(settings: UpdateSettings) -> tuple[timedelta | None, bool]:
    """``minAge`` and whether it counts from the creation time; PolicyError naming the field."""
    from_text = (settings.min_age_from or FROM_SEEN).strip().lower()
    if from_text not in MIN_AGE_FROM:
        raise PolicyError(
            f"{settings.where('min_age_from')}: '{settings.min_age_from}' is not one of "
            f"{', '.join(MIN_AGE_FROM)}"
        )
    if not settings.min_age:
        return None, False
    try:
        min_age = parse_go_duration(settings.min_age.strip())
    except DurationError as err:
        raise PolicyError(f"{settings.where('min_age')}: {err}") from None
    if min_age.total_seconds() < 0:
        raise PolicyError(f"{settings.where('min_age')}: '{settings.min_age}' is negative")
    return (min_age or None), from_text == FROM_CREATED


def scan_key_for(
    policy: Policy, endpoint: RegistryEndpoint, repository: str, credentials: str
) -> ScanKey:
    """The registry scan a policy needs of ``repository`` (images and OCI charts alike)."""
    metadata = needs_metadata(policy, time_sorted=endpoint.tag_sort_mode.is_time_sorted)
    return ScanKey(
        api_url=endpoint.api_url,
        repository=repository,
        credentials=credentials,
        metadata=metadata,
        platforms=tuple(policy.platforms.keys) if metadata else (),
        only_tags=policy.strategy.only_tags(policy.constraint),
    )


def skipped_result(skipped: SkippedImage) -> ImageResult:
    """The result of an image (or chart) left out of the application by its templates."""
    if skipped.error:
        outcome, reason = Outcome.ERROR, ImageReason.INVALID_CONFIG
    else:
        outcome, reason = Outcome.SKIPPED, ImageReason.TEMPLATE_MISSING_KEY
    return ImageResult(
        skipped.alias,
        skipped.image,
        None,
        None,
        outcome,
        reason,
        skipped.message,
        detail=skipped.detail,
    )
